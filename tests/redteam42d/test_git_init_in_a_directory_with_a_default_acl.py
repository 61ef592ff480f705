"""False alarm. docs/shell_exec.md "Judging": a new path is judged by "the bits beyond what ... the user's umask gives
a new path", "git's own directories may be made: ``git init``", and (brief) "ACLs inherited from a directory's
default ACL land". In a team directory whose default ACL gives the group rwx (a setgid share: umask does not apply
there, the mode's group bits are the inherited mask), ``git init shared/lib`` — what the user's own git would do
there with the same result — is refused path by path ("it would make shared/lib/.git/HEAD (git's own) writable by
others", though only the group may write, by the project's own inherited ACL): the repository never lands. Expected:
the inherited grant is the directory's, not the command's; the repository lands."""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import pytest

from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

DEFAULT = "system.posix_acl_default"


def _acl(other: int, group: int) -> bytes:
    return struct.pack("<I", 2) + b"".join(
        struct.pack("<HHI", tag, perm, 0xFFFFFFFF) for tag, perm in ((1, 7), (4, group), (0x20, other))
    )


async def test_false_alarm_git_init_in_a_team_directory_with_a_default_acl(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    shared = root / "shared"
    shared.mkdir(parents=True)
    try:
        os.setxattr(shared, DEFAULT, _acl(other=5, group=7))
    except OSError as exc:
        pytest.skip(f"no POSIX ACLs here: {exc}")
    person = Person(answer=True)
    async with shell(root, person) as client:
        made = await run(client, "git init -q shared/lib")
    refused = [p for p in made.get("changes", {}).get("paths", []) if p.get("action") == "refused"]
    assert (shared / "lib" / ".git" / "HEAD").exists() and not refused, (
        f"git init refused in a directory with a default ACL: {refused[:3]} ({len(refused)} refusals)"
    )
