"""A project file that is a hard link of a file OUTSIDE the allowed root (a dotfiles checkout, a shared fixture).
``upper`` promises "nothing outside is written through a link" — true for bytes (a rewrite replaces only the name
inside), but the new ``meta`` step changes the INODE in place: chmod, user.* attributes and times through the
inside name land on the outside file. Mode bits include set-user-ID and world-writable; attributes include
overlayfs bookkeeping (see test_overlay_xattrs), which makes the outside file unreadable to every later box that
shows it.

Each test FAILS when the attack succeeds."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from support.boxed import program, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


async def test_metadata_through_a_name_inside_never_reaches_a_file_outside(workspace: Path) -> None:
    outside = workspace.parent / "outside" / "secret.txt"
    os.chmod(outside, 0o600)
    os.utime(outside, ns=(5 * 10**9, 5 * 10**9))
    os.link(outside, workspace / "shared.txt")
    before = outside.stat()
    code = program(
        workspace,
        "meta",
        """
os.chmod("shared.txt", 0o6777)
os.setxattr("shared.txt", "user.overlay.metacopy", b"")
os.setxattr("shared.txt", "user.from_the_box", b"1")
os.utime("shared.txt", ns=(7 * 10**9, 7 * 10**9))
""",
    )
    async with shell(workspace) as client:
        out = await run(client, code)
    now = outside.stat()
    changed = {
        "mode": (oct(stat.S_IMODE(before.st_mode)), oct(stat.S_IMODE(now.st_mode))),
        "mtime": (before.st_mtime_ns, now.st_mtime_ns),
        "xattrs": os.listxattr(outside),
    }
    assert stat.S_IMODE(now.st_mode) == 0o600 and now.st_mtime_ns == before.st_mtime_ns and not os.listxattr(outside), (
        f"the file OUTSIDE the root changed: {changed}; the call said {out['changes']['summary']!r}"
    )
