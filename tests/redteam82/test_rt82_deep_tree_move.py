"""Red team 82 (claim 5, box side): a directory tree deeper than PATH_MAX moved by a command. Natively one rename; in
the box overlayfs answers EXDEV and the rename helper copies the tree (``shell.sandbox.tree_moves``), opening each
directory by its whole path from the tree's top: ENAMETOOLONG, the command's ``mv`` fails ("File name too long").
Every apply step and the undo at that depth work (``test_rt82_explore.py``: modify, chmod, delete, create, rename,
mkdir+move, symlink, hard link, xattr, rmtree — applied and undone exactly)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.boxed import program, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

SEG = "d" * 200
DEPTH = 25  # 25 * 201 bytes > PATH_MAX (4096)


def _deep(root: Path) -> None:
    root.mkdir(parents=True)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(DEPTH):
        os.mkdir(SEG, dir_fd=fd)
        nfd = os.open(SEG, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    f = os.open("f", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    os.write(f, b"deep\n")
    os.close(f)
    os.link("f", "g", src_dir_fd=fd, dst_dir_fd=fd)  # (a file with two names at that depth: linked again there)
    os.close(fd)


async def test_a_deep_tree_moved_by_a_command_moves(workspace: Path) -> None:
    root = workspace / "p"
    _deep(root)
    command = program(root, "move", f'os.rename("{SEG}", "moved")\n')
    async with shell(workspace) as client:
        out = await run(client, command, cwd=str(root))
    assert out["exitCode"] == 0, out.get("stderr", "")[-300:]
    assert out["transaction"] == "applied" and (root / "moved").is_dir() and not (root / SEG).exists(), out
    fd = os.open(root / "moved", os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(DEPTH - 1):
        nfd = os.open(SEG, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    try:
        first, second = (os.stat(n, dir_fd=fd, follow_symlinks=False) for n in ("f", "g"))
    finally:
        os.close(fd)
    assert (first.st_ino, first.st_nlink) == (second.st_ino, 2), (first, second)  # (still one file, two names)
