"""Shared by red teams 48-51's tests of what runs later (tests/redteam42m): a command that writes one file through
the real shell_exec with a person who declines every question, the project's first commit, and the user's next
``git commit`` outside the box."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from support.boxed import Person, program, run, shell
from support.hooked import git

COMMITTER = {"GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@x", "GIT_COMMITTER_NAME": "u", "GIT_COMMITTER_EMAIL": "u@x"}


def first_commit(root: Path) -> None:
    """Everything there committed, no hook run."""
    git(root, "add", "-A")
    git(root, "commit", "-q", "--no-verify", "-m", "init")


def next_commit(root: Path) -> subprocess.CompletedProcess[str]:
    """The user's next ``git commit`` in the project, outside the box: its hooks run."""
    (root / "hello.txt").write_text("hello again\n")
    subprocess.run(["git", "add", "hello.txt"], cwd=root, capture_output=True, timeout=60)
    return subprocess.run(["git", "commit", "-qm", "next"], cwd=root, capture_output=True, timeout=60, text=True,
                          env={**os.environ, **COMMITTER})  # fmt: skip


async def write_declined(root: Path, rel: str, text: str, *, executable: bool = False) -> tuple[Person, dict[str, Any]]:
    """A command (a Python program kept as data) writing ``text`` at ``rel``; the person declines every question."""
    code = f"p = {rel!r}\nos.makedirs(os.path.dirname(p) or '.', exist_ok=True)\nopen(p, 'w').write({text!r})\n"
    edit = program(root, "edit", code + ("os.chmod(p, 0o755)\n" if executable else ""))
    person = Person(answer=False)
    async with shell(root, person) as client:
        out = await run(client, edit, cwd=str(root))
    return person, out


def why(person: Person, out: dict[str, Any]) -> str:
    return f"questions={person.questions} transaction={out.get('transaction')} changes={out.get('changes')}"


SITE = f".venv/lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages"


def husky9(root: Path, runner: str, stub: str) -> None:
    """husky 9's hook runner as ``husky`` installs it: ``.husky/_/h`` (which puts ``node_modules/.bin`` first on PATH
    and runs ``.husky/<hook>``) and the stub git runs; the project's own hook (``.husky/pre-commit``) is the caller's,
    and so is ``core.hooksPath``."""
    (root / ".husky" / "_").mkdir(parents=True)
    (root / ".husky" / "_" / "h").write_text(runner)
    (root / ".husky" / "_" / "pre-commit").write_text(stub)
    for name in ("h", "pre-commit"):
        (root / ".husky" / "_" / name).chmod(0o755)


def pre_commit_venv(root: Path, hook: str, *, quoted: bool = True) -> Path:
    """pre-commit installed in the project's venv (its package's ``__init__``/``__main__``), a repository, and the hook
    ``pre-commit install`` writes (``hook``, with ``{install_python}`` filled, shlex-quoted unless not ``quoted``);
    the site-packages directory."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / ".venv")], check=True)
    package = root / SITE / "pre_commit"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text("raise SystemExit(0)\n")
    (root / ".gitignore").write_text(".venv/\n.t/\n")
    git(root, "init", "-q")
    python = str(root / ".venv" / "bin" / "python3")
    (root / ".git" / "hooks" / "pre-commit").write_text(
        hook.format(install_python=shlex.quote(python) if quoted else python)
    )
    (root / ".git" / "hooks" / "pre-commit").chmod(0o755)
    return root / SITE


async def pre_commits_module_rewritten(root: Path, hook: str, text: str) -> str:
    """A project at ``root`` (made here) whose git hook is pre-commit's (``hook``) installed in its own venv; a call
    rewrites pre_commit's ``__main__.py`` with ``text`` (every question declined), then the user's next commit
    runs: why the rewrite landed (the result, the questions asked)."""
    root.mkdir()
    pre_commit_venv(root, hook)
    first_commit(root)
    person, out = await write_declined(root, f"{SITE}/pre_commit/__main__.py", text)
    next_commit(root)
    return why(person, out)
