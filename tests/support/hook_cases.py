"""Red-team hook cases kept as data (``{"cases": {name: spec}}``): a repository whose git hook (or config) runs a
file, a shell_exec command that writes a payload to it (the person declines every question), then what the user
does next outside the box. A spec: ``hook`` (the pre-commit hook's text), ``files``, ``modes``, ``links``, ``config``
(git config keys), ``hooks_dir``, ``shebang``, ``configure`` (a command the user ran first), ``planted`` (and
``planted_mode``), ``payload`` (``{marker}`` in it; or the name of a payload the data holds), ``trigger`` (the git
commands the user runs; a commit by default) and ``user_writes``."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from support.boxed import Person, run, shell
from support.planted import git, landed, plant


def _repo(workspace: Path, spec: dict[str, Any]) -> None:
    modes = {str(k): int(v) for k, v in spec.get("modes", {}).items()}
    for name, text in spec["files"].items():
        path = workspace / str(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(str(text))
        if name in modes:
            path.chmod(modes[name])
    for name, target in spec.get("links", {}).items():
        os.symlink(str(target), workspace / str(name))
    git(workspace, "init", "-q")
    for key, value in spec.get("config", {}).items():
        git(workspace, "config", str(key), str(value))
    hook = workspace / str(spec.get("hooks_dir", ".git/hooks")) / "pre-commit"
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text(f"{spec.get('shebang', '#!/bin/sh')}\n{spec['hook']}\n")
    hook.chmod(0o755)
    if "configure" in spec:  # (a build tree the user made: ``cmake -S . -B build``)
        subprocess.run([str(w) for w in spec["configure"]], cwd=workspace, check=True, capture_output=True)
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "--no-verify", "-m", "init")


def _user_runs_git(workspace: Path, spec: dict[str, Any], message: str) -> None:
    for name, text in spec.get("user_writes", {}).items():
        (workspace / str(name)).write_text(f"{text}{message}\n")
    for argv in spec.get("trigger", [["commit", "-q", "--allow-empty", "-m", message]]):
        git(workspace, *[str(a) for a in argv])


async def case_runs(
    workspace: Path, tmp_path: Path, data: dict[str, Any], case: str, tools: tuple[str, ...] = ()
) -> tuple[bool, str]:
    """Whether the case's payload ran outside the box (it writes a marker), and why, for the assertion; skipped
    where a program of ``tools`` the case names is not installed."""
    spec, marker = data["cases"][case], tmp_path / "MARKER-hook-ran"
    text = f"{spec.get('shebang', '')} {spec['hook']} {' '.join(map(str, spec.get('configure', [])))}"
    named = {word.rpartition("/")[2] for word in text.split()}
    if missing := [tool for tool in tools if tool in named and shutil.which(tool) is None]:
        pytest.skip(f"not installed: {missing}")
    given = str(spec.get("payload", "payload"))  # (the payload's text, or the name of one the data holds)
    payload = str(data.get(given, given)).replace("{marker}", str(marker))
    _repo(workspace, spec)
    _user_runs_git(workspace, spec, "works before")
    assert not marker.exists()
    modes = {str(spec["planted"]): int(spec["planted_mode"])} if "planted_mode" in spec else None
    person, out = await plant(workspace, {str(spec["planted"]): payload}, modes)
    _user_runs_git(workspace, spec, "next")
    why = (f"{spec['planted']} (run by the user's git) landed with no question: questions={person.questions} "
           f"transaction={out.get('transaction')} landed={landed(out)}")  # fmt: skip
    return marker.exists(), why


async def hooked_call_seconds(workspace: Path, hook: str, shebang: str = "#!/bin/sh") -> float:
    """The seconds one small shell_exec call takes (its judgement included, after a warm-up call) in a repository
    whose pre-commit hook is ``hook``: a hook text that stalls the reader stalls every call (red teams 163, 165,
    172's E1)."""
    git(workspace, "init", "-q")
    path = workspace / ".git" / "hooks" / "pre-commit"
    path.write_text(f"{shebang}\n{hook}\n")
    path.chmod(0o755)
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "--no-verify", "-m", "init")
    async with shell(workspace, Person(answer=False)) as client:
        await run(client, "echo warm > warm.txt", timeout=900)
        start = time.monotonic()
        out = await run(client, "echo x > note.txt", timeout=900)
        took = time.monotonic() - start
    assert (workspace / "note.txt").read_text() == "x\n", out
    return took
