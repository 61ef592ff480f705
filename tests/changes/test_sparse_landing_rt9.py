"""What a file takes on disk, as natively (red team 9 F1, F2).

F1: overlayfs copies a real file up in 1 MiB pieces and writes a sparse file's small holes as zeros; a disk image
with scattered data changed in place by one byte landed up to a MiB per extent larger. F2: space a command reserves
beyond a file's end (``fallocate -n``) did not land (said as a time change)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.boxed import run, shell
from support.differential import native

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

SIZE, STEP = 128 << 20, 4 << 20  # 32 extents of 4 KiB, one every 4 MiB


def scattered(path: Path) -> None:
    with open(path, "wb") as f:
        f.truncate(SIZE)
        for at in range(0, SIZE, STEP):
            f.seek(at)
            f.write(b"d" * 4096)


@pytest.mark.parametrize("command", ["echo x >> img.bin", "printf Z | dd of=img.bin bs=1 seek=5 conv=notrunc"])
async def test_a_sparse_image_changed_in_place_does_not_land_with_its_holes_filled(
    workspace: Path, command: str
) -> None:
    mirror = workspace.parent / "native"
    mirror.mkdir()
    for root in (mirror, workspace):
        scattered(root / "img.bin")
    native(mirror, command)
    async with shell(workspace) as client:
        out = await run(client, command, cwd=str(workspace))
    assert out["transaction"] == "applied", out
    assert (workspace / "img.bin").read_bytes() == (mirror / "img.bin").read_bytes()
    landed, natively = (os.lstat(root / "img.bin").st_blocks // 2 for root in (workspace, mirror))
    assert landed <= natively + 64, (landed, natively)  # KiB; 32 MiB filled before


async def test_space_reserved_beyond_a_files_end_lands(workspace: Path) -> None:
    (workspace / "data.db").write_bytes(b"q" * 4096)
    async with shell(workspace) as client:
        out = await run(client, "fallocate -n -l 16M data.db", cwd=str(workspace))
    assert out["transaction"] == "applied", out
    st = os.lstat(workspace / "data.db")
    assert st.st_size == 4096 and st.st_blocks * 512 >= 16 << 20, (st.st_size, st.st_blocks)
    assert (workspace / "data.db").read_bytes() == b"q" * 4096
