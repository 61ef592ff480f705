"""Fidelity: a change to an existing file whose path is longer than PATH_MAX (100 directories of 60 characters:
about 6,100 bytes, below the 128 levels a change set may reach) is not applied. The call reports it as a
*conflict* — "not applied: its directory changed (File name too long)" — though nobody else touched anything
(docs/shell_exec.md: "Conflicts are only what someone else did"; the apply walks by descriptor at any depth).
Natively the append and the chmod land. Creating, moving or deleting such a tree lands fine; changing a file in it
does not. FAILS on the current code."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from support.boxed import program, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

NAME = "D" * 60
DEPTH = 100


def _leaf_dir(root: Path, *, make: bool) -> int:
    """An fd of the deepest directory (made when ``make``)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(DEPTH):
        if make:
            os.mkdir(NAME, dir_fd=fd)
        inner = os.open(NAME, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    return fd


async def test_append_to_a_file_deeper_than_path_max_lands(workspace: Path) -> None:
    fd = _leaf_dir(workspace, make=True)
    try:
        out = os.open("leaf.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(out, b"leaf\n")
        os.close(out)
    finally:
        os.close(fd)
    code = program(
        workspace,
        "append",
        f"""
fd = os.open(".", os.O_RDONLY)
for _ in range({DEPTH}):
    inner = os.open({NAME!r}, os.O_RDONLY, dir_fd=fd); os.close(fd); fd = inner
out = os.open("leaf.txt", os.O_WRONLY | os.O_APPEND, dir_fd=fd); os.write(out, b"more\\n"); os.close(out)
os.chmod(f"/proc/self/fd/{{fd}}/leaf.txt", 0o600)
""",
    )
    async with shell(workspace) as client:
        result = await run(client, code)
    fd = _leaf_dir(workspace, make=False)
    try:
        data = os.read(leaf := os.open("leaf.txt", os.O_RDONLY, dir_fd=fd), 100)
        os.close(leaf)
        mode = stat.S_IMODE(os.stat("leaf.txt", dir_fd=fd).st_mode)
    finally:
        os.close(fd)
    conflicts = [(p["action"], p["reason"]) for p in result["changes"]["paths"] if p["action"] == "conflict"]
    assert (data, mode, conflicts) == (b"leaf\nmore\n", 0o600, []), (data, oct(mode), conflicts)
