"""The server's own rule (its result: "access control lists a command sets are not applied: they grant what the mode
does not show"; the brief: "ACLs a command sets never land; ACLs inherited from a directory's default ACL land"),
and docs/shell_exec.md "Judging": a file or directory made writable by others is asked. A team directory of the
project (``shared/``) carries a default ACL (``group::rwx``, as a setgid team share does). A command makes
``shared/plugins/`` and sets on it a default ACL of its own (``other::rwx``). Observed: it lands as the command set
it (the question, if any, only says "writable by its group", the inherited mask): the decision is taken from the
*parent* having a default ACL (``xattrs.inherits_acl``), not from whether the entry's ACL is the one it inherited;
every file the user's tools later make there is writable by anyone. Expected: the command's own ACLs left out (or
the grant refused/asked), as they are outside such a directory."""

from __future__ import annotations

import os
import shutil
import stat
import struct
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

DEFAULT = "system.posix_acl_default"


def _acl(other: int, group: int = 5) -> bytes:
    # version 2; USER_OBJ rwx, GROUP_OBJ, OTHER
    return struct.pack("<I", 2) + b"".join(
        struct.pack("<HHI", tag, perm, 0xFFFFFFFF) for tag, perm in ((1, 7), (4, group), (0x20, other))
    )


def _default_of(path: Path) -> bytes | None:
    try:
        return os.getxattr(path, DEFAULT)
    except OSError:
        return None  # none (left out as the command's own)


async def test_attack_command_set_default_acl_lands_in_a_directory_with_a_default_acl(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    shared = root / "shared"
    shared.mkdir(parents=True)
    try:
        os.setxattr(shared, DEFAULT, _acl(other=5, group=7))  # the team's: group rwx, others r-x
    except OSError as exc:
        pytest.skip(f"no POSIX ACLs here: {exc}")
    code = f"""
acl = {_acl(other=7)!r}
os.mkdir('shared/plugins')
os.setxattr('shared/plugins', {DEFAULT!r}, acl)
"""
    person = Person(answer=True)
    async with shell(root, person) as client:
        script = program(root, "acl", code)
        made = await run(client, script)
    landed = [p for p in (shared / "plugins",) if p.exists() and _default_of(p) == _acl(other=7)]
    old = os.umask(0o022)
    try:
        for directory in landed:
            (directory / "later").write_text("x\n")
    finally:
        os.umask(old)
    writable = [str(d.relative_to(root)) for d in landed if os.stat(d / "later").st_mode & stat.S_IWOTH]
    assert not writable, (f"the command's own default ACLs landed: {writable}; questions: {person.questions}; "
                          f"result: {made.get('changes') or made}")  # fmt: skip
