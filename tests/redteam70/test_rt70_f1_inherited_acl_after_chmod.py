"""Red team 70, finding F1 (MEDIUM): a new entry made in a directory with a default ACL, then given a mode with
``chmod`` (``chmod o+r n``, ``chmod 755 pub``, ``shutil.copy2``'s copymode, ``tar -xp``, ``unzip``) lands WITHOUT the
ACL it inherited — natively it keeps the inherited ACL with the mask chmod gave it.

The landed entry keeps the mode bits, so the owning group gets the *mask's* bits: in the case below the owning
group (``group::r--`` natively) gains WRITE (``0664`` with no ACL), unasked, while the teammate named in the
default ACL (``user:54321:rwx``, effective ``rw-`` natively) drops to ``other``'s ``r--``. The result says only
"its system.posix_acl_access left out: access control lists a command sets are not applied: they grant what the
mode does not show" — but the command set no ACL (the kernel gave it from the directory's default), and the
mode is what grants more after the ACL is dropped. No question is asked about the group's write.

docs/shell_exec.md: "a new entry keeps the ACL it inherits from its directory's default ACL (one granting no one
more than that default)" and "a rewritten or re-moded file keeps its own (with the mask chmod gave it, as natively)".
The ``other`` entry chmod widened is the mode itself (shown), not a grant the mode does not show.

Suspected cause: the judging of a new entry's ACL against its directory's default ACL (changes/ — the check
"granting no one more than that default") compares every entry including ``other::`` (and the mask) that
chmod rewrote, so any chmod that widens ``other`` or the mask after creation makes the inherited ACL look
"set by the command"; the fallback drops the ACL but keeps the mode, whose group bits were the mask.

FAILS while the box lands these entries without their inherited ACL (or the owning group gains write)."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import struct
import subprocess
from pathlib import Path

import pytest

from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="no bwrap")]

ACCESS, DEFAULT = "system.posix_acl_access", "system.posix_acl_default"
ANY = 0xFFFFFFFF
TEAMMATE = 54321


def acl(*entries: tuple[int, int, int]) -> bytes:
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", t, p, i) for t, p, i in entries)


# user::rwx user:<teammate>:rwx group::r-x mask::rwx other::---   (a team directory, kept from others)
TEAM_DIR = acl((0x01, 7, ANY), (0x02, 7, TEAMMATE), (0x04, 5, ANY), (0x10, 7, ANY), (0x20, 0, ANY))

CASES = {
    "chmod-o+r": "echo n > team/n && chmod o+r team/n",
    "mkdir-chmod-755": "mkdir team/pub && chmod 755 team/pub",
    "copy2": "python3 -c \"import shutil; shutil.copy2('f.txt', 'team/c')\"",
}


def project(root: Path) -> None:
    (root / "team").mkdir(parents=True)
    os.setxattr(root / "team", ACCESS, TEAM_DIR)
    os.setxattr(root / "team", DEFAULT, TEAM_DIR)
    (root / "f.txt").write_text("f\n")


def acl_of(p: Path) -> bytes | None:
    with contextlib.suppress(OSError):
        return os.getxattr(p, ACCESS)
    return None


@pytest.mark.parametrize("name", list(CASES))
async def test_new_entry_keeps_its_inherited_acl_after_chmod(workspace: Path, name: str) -> None:
    try:
        os.setxattr(workspace, "user.probe", b"1")
        os.removexattr(workspace, "user.probe")
        probe = workspace / "probe"
        probe.write_text("")
        os.setxattr(probe, ACCESS, TEAM_DIR)
        probe.unlink()
    except OSError:
        pytest.skip("no POSIX ACLs here")
    nat, box = workspace.parent / "nat", workspace / "p"
    for r in (nat, box):
        r.mkdir()
        project(r)
    command = CASES[name]
    subprocess.run(["bash", "-c", command], cwd=nat, timeout=60, check=True)
    person = Person()
    async with shell(workspace, person) as client:
        out = await run(client, command, cwd=str(box))
    target = {"chmod-o+r": "team/n", "mkdir-chmod-755": "team/pub", "copy2": "team/c"}[name]
    a, b = acl_of(nat / target), acl_of(box / target)
    mode_n, mode_b = stat.S_IMODE(os.lstat(nat / target).st_mode), stat.S_IMODE(os.lstat(box / target).st_mode)
    assert mode_n == mode_b
    assert a == b, (
        f"{target}: natively ACL {a!r} (mode {mode_n:o}), landed ACL {b!r} (mode {mode_b:o}); "
        f"questions {person.questions}; changes {out.get('changes')}"
    )
