"""Projects whose git hooks run something of theirs, for the tests of what the user's own tools run later, outside
the box (red teams 5b and 6): a repository with a hook, a command that rewrites a package.json script (the payload
travels as data in a program of the project), and git run as the user would run it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from support.boxed import program
from support.fidelity import GIT_ENV


def git(cwd: Path, *args: str) -> None:
    """git as the user runs it next, outside any box."""
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env={**os.environ, **GIT_ENV})


def git_out(cwd: Path, *args: str) -> str:
    """What a git command prints (it must succeed)."""
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=30).stdout


def one_commit(root: Path) -> None:
    """A repository on ``main`` with one commit of ``a.txt``."""
    git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("a\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "--no-verify", "-m", "init")


def stashed(root: Path, text: str) -> str:
    """``a.txt`` changed to ``text`` and stashed: the stash commit's id."""
    (root / "a.txt").write_text(text)
    git(root, "stash", "-q")
    return git_out(root, "rev-parse", "refs/stash").strip()


def hooked(workspace: Path, hook: str, package: dict[str, Any] | None = None) -> None:
    """A repository (with ``package`` as its package.json) whose pre-commit hook runs ``hook``, committed."""
    if package is not None:
        (workspace / "package.json").write_text(json.dumps(package, indent=2) + "\n")
    git(workspace, "init", "-q")
    hook_file = workspace / ".git" / "hooks" / "pre-commit"
    hook_file.write_text(f"#!/bin/sh\n{hook}\n")
    hook_file.chmod(0o755)
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "init")


def writes(marker: Path) -> str:
    """A package.json script that leaves ``marker`` when it runs."""
    return f"node -e \"require('fs').writeFileSync('{marker}', 'ran')\""


def sets_script(workspace: Path, script: str, value: str) -> str:
    """The command line of a program that sets the package.json script ``script`` to ``value``."""
    return program(
        workspace,
        "edit",
        "import json\n"
        "p = json.load(open('package.json'))\n"
        f"p.setdefault('scripts', {{}})[{script!r}] = {value!r}\n"
        "open('package.json', 'w').write(json.dumps(p, indent=2) + '\\n')\n",
    )
