"""Red team 61 F2: a sparse file the command renames (``mv disk.img d/``, with or without a change) lands with the
zeros overlayfs's copy-up wrote for its holes (1 MiB pieces around every piece of data): a 256 MiB image holding
4 KiB every 2 MiB takes ~512 KiB natively and ~128 MiB after the call. The same file changed in place lands as
sparse as natively (``thin_like``, red team 9 F1); a renamed one is landed from its copy at a new name (a create
and a delete), and nothing made its holes again: now ``nofollow.thin_copy_up`` does, for a file overlayfs copied up
(alone, or in a new tree). Scripts as data: rt61_sparse.json. Bytes, modes and times are the same: only the space
on disk differs (a disk image, a core file, a database file)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from support.boxed import run, shell
from support.differential import native

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]
SCRIPTS: dict[str, str] = json.loads((Path(__file__).parent / "rt61_sparse.json").read_text())
SIZE, STRIDE = 256 << 20, 2 << 20


def project(root: Path) -> None:
    (root / "d").mkdir(parents=True)
    with open(root / "scattered.img", "wb") as f:
        for at in range(0, SIZE, STRIDE):
            f.seek(at)
            f.write(os.urandom(4096))
        f.truncate(SIZE)


def on_disk(root: Path) -> dict[str, int]:
    out = {}
    for d, _dirs, files in os.walk(root):
        for n in files:
            p = os.path.join(d, n)
            out[os.path.relpath(p, root)] = os.lstat(p).st_blocks * 512
    return out


@pytest.mark.parametrize("script", sorted(SCRIPTS))
async def test_attack_a_renamed_sparse_file_lands_as_sparse_as_natively(tmp_path: Path, script: str) -> None:
    nat, work = tmp_path / "native", tmp_path / "w"
    box = work / "p"
    for r in (nat, box):
        project(r)
    native(nat, SCRIPTS[script])
    async with shell(work) as client:
        out = await run(client, SCRIPTS[script], cwd=str(box))
    assert out.get("transaction") == "applied", out
    natively, landed = on_disk(nat), on_disk(box)
    assert natively.keys() == landed.keys()
    worse = {k: (natively[k], landed[k]) for k in natively if landed[k] > 2 * natively[k] + (1 << 20)}
    assert not worse, f"bytes on disk (native, landed): {worse}"
