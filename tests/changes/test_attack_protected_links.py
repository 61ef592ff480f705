"""Hard links between a protected path and an ordinary one.

The judgement judges paths; the new ``link`` step makes the command's new name another name of a REAL file, and
only the new name is judged. So ``ln .git/hooks/pre-commit bin/tool`` (or ``ln .envrc notes``) lands silently,
and from then on every metadata change the new ``meta`` step applies to ``bin/tool`` (mode, user.* attributes,
times) is applied to the protected inode: ``chmod +x bin/tool`` in a later call turns a disabled git hook on.

Each test FAILS when the attack succeeds."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


def git_repo(root: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    hook = root / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\n# the user's hook, switched off for now\nexit 0\n")
    os.chmod(hook, 0o644)
    return hook


async def test_a_protected_file_does_not_get_a_second_unprotected_name(workspace: Path) -> None:
    hook = git_repo(workspace)
    (workspace / ".envrc").write_text("export A=1\n")
    code = program(
        workspace,
        "link",
        """
os.makedirs("bin", exist_ok=True)
os.link(".git/hooks/pre-commit", "bin/tool")
os.link(".envrc", "notes.txt")
""",
    )
    person = Person()
    async with shell(workspace, person) as client:
        out = await run(client, code)
    shared = [
        str(p.relative_to(workspace))
        for p, target in ((workspace / "bin/tool", hook), (workspace / "notes.txt", workspace / ".envrc"))
        if p.exists() and os.path.samefile(p, target)
    ]
    assert not shared, (
        f"{shared} became hard links of protected files (transaction {out['transaction']}, refused "
        f"{out['changes']['refused']}, questions {person.questions})"
    )


async def test_a_later_chmod_through_the_new_name_does_not_switch_a_git_hook_on(workspace: Path) -> None:
    hook = git_repo(workspace)
    first = program(
        workspace,
        "link",
        """
os.makedirs("bin", exist_ok=True)
os.link(".git/hooks/pre-commit", "bin/tool")
""",
    )
    second = program(
        workspace,
        "chmod",
        """
os.chmod("bin/tool", 0o755)
""",
    )
    person = Person()
    async with shell(workspace, person) as client:
        one = await run(client, first)
        two = await run(client, second)
    mode = stat.S_IMODE(hook.stat().st_mode)
    assert not mode & 0o111, (
        f".git/hooks/pre-commit is now {oct(mode)}: git runs it at the next commit. "
        f"Call 1: {one['changes']['summary']!r}, "
        f"call 2: {two['changes']['summary']!r}, refused: {one['changes']['refused']}/{two['changes']['refused']}, "
        f"questions: {person.questions}"
    )


async def test_a_later_attribute_through_the_new_name_does_not_reach_a_protected_file(workspace: Path) -> None:
    envrc = workspace / ".envrc"
    envrc.write_text("export A=1\n")
    first = program(
        workspace,
        "link",
        """
os.link(".envrc", "notes.txt")
""",
    )
    second = program(
        workspace,
        "attr",
        """
os.setxattr("notes.txt", "user.planted", b"through a second name")
os.utime("notes.txt", ns=(10**9, 10**9))
""",
    )
    async with shell(workspace) as client:
        await run(client, first)
        await run(client, second)
    assert "user.planted" not in os.listxattr(envrc) and envrc.stat().st_mtime_ns != 10**9, (
        f".envrc (protected) got {os.listxattr(envrc)}, mtime {envrc.stat().st_mtime_ns}"
    )
