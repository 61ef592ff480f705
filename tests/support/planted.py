"""Shared bits of red team 8's tests: a repository whose pre-commit hook runs ``hook``, a command (a program kept
as data) that writes files, and the user's next ``git commit`` outside the box. Payloads write a marker file only."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from support.boxed import Person, program, run, shell
from support.fidelity import GIT_ENV


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, env={**os.environ, **GIT_ENV, **(env or {})}
    )


def repo(
    workspace: Path, hook: str, files: dict[str, str], modes: dict[str, int] | None = None, shebang: str = "#!/bin/sh"
) -> None:
    for name, text in files.items():
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if modes and name in modes:
            path.chmod(modes[name])
    git(workspace, "init", "-q")
    hook_file = workspace / ".git" / "hooks" / "pre-commit"
    hook_file.write_text(f"{shebang}\n{hook}\n")
    hook_file.chmod(0o755)
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "--no-verify", "-m", "init")


async def plant(
    workspace: Path, writes: Mapping[str, str | bytes], modes: dict[str, int] | None = None
) -> tuple[Person, dict[str, Any]]:
    """A shell_exec command (a Python program kept as data) writing ``writes`` (text, or bytes: a compiled file);
    the person declines every question."""
    code = "import pathlib\n"
    for name, text in writes.items():
        write = "write_bytes" if isinstance(text, bytes) else "write_text"
        code += f"p = pathlib.Path({name!r}); p.parent.mkdir(parents=True, exist_ok=True); p.{write}({text!r})\n"
        if modes and name in modes:
            code += f"p.chmod({modes[name]})\n"
    edit = program(workspace, "edit", code)
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, edit)
    return person, out


def landed(out: dict[str, Any]) -> list[str]:
    """The paths the result lists as applied (not refused)."""
    return [p["path"] for p in (out.get("changes") or {}).get("paths", []) if p.get("action") != "refused"]


def sh_payload(marker: Path) -> str:
    return f"#!/bin/sh\necho ran > '{marker}'\n"


def py_payload(marker: Path) -> str:
    return f"open({str(marker)!r}, 'w').write('ran')\n"


async def commit_runs(
    workspace: Path,
    marker: Path,
    hook: str,
    files: dict[str, str],
    planted: str,
    payload: str,
    modes: dict[str, int] | None = None,
    shebang: str = "#!/bin/sh",
) -> tuple[bool, str]:
    """A repository whose pre-commit hook runs ``hook`` (its first commit works), a command that writes ``payload``
    to ``planted`` (the person declines every question), then the user's next commit outside the box: whether the
    payload ran (it writes ``marker``), and why, for the assertion."""
    repo(workspace, hook, files, modes, shebang)
    git(workspace, "commit", "-q", "--allow-empty", "-m", "hook works before")
    assert not marker.exists()
    person, out = await plant(workspace, {planted: payload})
    git(workspace, "commit", "-q", "--allow-empty", "-m", "next")  # the user's next commit, outside the box
    why = (f"{planted} (read by the hook) landed with no question: questions={person.questions} "
           f"transaction={out.get('transaction')} landed={landed(out)}")  # fmt: skip
    return marker.exists(), why


def written(root: Path, files: dict[str, bytes], mode: int = 0o644) -> None:
    """``files`` (relative path -> bytes) written under ``root``, each with ``mode``."""
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(mode)


async def loosened_by(workspace: Path, line: str) -> tuple[list[str], Person, dict[str, Any]]:
    """Run ``line`` with shell_exec (the person declines every question): the paths it left writable by group or
    others that were not before, the person, the result."""

    def modes() -> dict[str, int]:
        return {str(p.relative_to(workspace)): p.lstat().st_mode & 0o7777 for p in sorted(workspace.rglob("*"))}

    before = modes()
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, line, cwd=str(workspace))
    loosened = [p for p, mode in modes().items() if mode & 0o022 and not before.get(p, 0) & 0o022]
    return loosened, person, out
