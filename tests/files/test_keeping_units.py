"""Units: a tree kept by copying (the history store on another file system, or names elsewhere) is the tree as it
was: holes kept, FIFOs made (never opened), links not followed, modes, times and ``user.*`` attributes (red team 9:
it was copied dense, and a FIFO in it failed the keep)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from mcp_server_guard.files.copying import copy_into


def test_a_tree_kept_by_copy_keeps_holes_fifos_links_modes_and_times(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    with open(tree / "sub" / "img", "wb") as f:
        f.truncate(64 << 20)
        f.write(b"head")
    os.mkfifo(tree / "pipe", 0o640)
    (tree / "outside").symlink_to("/etc/passwd")
    os.setxattr(tree / "sub", "user.note", b"kept")
    os.chmod(tree / "sub", 0o750)
    for path in (tree / "sub" / "img", tree / "sub", tree):
        os.utime(path, ns=(10**18, 10**18))
    dirfd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        copy_into(dirfd, "tree", tmp_path / "kept", os.lstat(tree))
    finally:
        os.close(dirfd)
    kept = tmp_path / "kept"
    assert sorted(os.listdir(kept)) == ["outside", "pipe", "sub"]
    assert stat.S_ISFIFO(os.lstat(kept / "pipe").st_mode) and stat.S_IMODE(os.lstat(kept / "pipe").st_mode) == 0o640
    assert os.readlink(kept / "outside") == "/etc/passwd"
    img = os.lstat(kept / "sub" / "img")
    assert img.st_size == 64 << 20 and img.st_blocks * 512 <= 64 << 10
    assert (kept / "sub" / "img").read_bytes()[:4] == b"head"
    assert stat.S_IMODE(os.lstat(kept / "sub").st_mode) == 0o750
    assert os.getxattr(kept / "sub", "user.note") == b"kept"
    assert [os.lstat(p).st_mtime_ns for p in (kept / "sub" / "img", kept / "sub", kept)] == [10**18] * 3
