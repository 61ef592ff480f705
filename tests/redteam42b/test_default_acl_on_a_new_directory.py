"""Issue 42 (1): "Mode changes judged by what they grant: ... group/other-writable asked outside build/cache dirs
and refused on protected paths and git dirs" (docs/shell_exec.md "Judging": "a file or directory made writable by
group or others" is asked). A POSIX default ACL (``system.posix_acl_default``) grants the same thing without a
mode bit: every file later made in the directory (by the user's own tools) is writable by others. A command sets
one on a directory it makes, here on the ``hooks`` of a repository it initialises; the directory lands by rename
with the attribute. Observed: nothing refused or asked, the ACL lands, and a hook the user later writes there is
world-writable. Expected: refused (git dir) / asked (elsewhere), like ``chmod o+w``."""

from __future__ import annotations

import os
import shutil
import stat
import struct
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

ACL = "system.posix_acl_default"


def _acl_other_rwx() -> bytes:
    # version 2; USER_OBJ rwx, GROUP_OBJ r-x, OTHER rwx
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, perm, 0xFFFFFFFF)
                                           for tag, perm in ((1, 7), (4, 5), (0x20, 7)))  # fmt: skip


async def test_attack_default_acl_on_new_dirs_grants_others_write_unasked(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    probe = root / "probe"
    probe.mkdir()
    try:
        os.setxattr(probe, ACL, _acl_other_rwx())
    except OSError as exc:
        pytest.skip(f"no POSIX ACLs here: {exc}")
    probe.rmdir()
    code = f"""
acl = {_acl_other_rwx()!r}
os.mkdir('shared')
os.setxattr('shared', {ACL!r}, acl)
"""
    person = Person(answer=False)
    async with shell(root, person) as client:
        script = program(root, "acl", code + f"os.setxattr('lib/.git/hooks', {ACL!r}, acl)\n")
        made = await run(client, f"git init -q lib && {script}")
    landed = [p for p in (root / "shared", root / "lib" / ".git" / "hooks") if p.exists() and ACL in os.listxattr(p)]
    # What the user's own tool writes there later (umask 022):
    old = os.umask(0o022)
    try:
        for directory in landed:
            (directory / "later").write_text("x\n")
    finally:
        os.umask(old)
    writable = [str(d.relative_to(root)) for d in landed if os.stat(d / "later").st_mode & stat.S_IWOTH]
    assert not writable, (f"default ACLs landed unasked: {writable}; questions: {person.questions}; "
                          f"result: {made.get('changes') or made}")  # fmt: skip
