"""Red team 68, finding: a directory holding one of the project's FIFOs, renamed (``mv F F2``).

docs/shell_exec.md ("FIFOs, sockets and devices"): "A project's own FIFO in a directory a command renames stays
under its old name (that part of the rename is refused, never half done)". What lands instead: ``F2/data.txt``
is made *and* ``F/data.txt`` stays — the regular file is copied, not moved (two files where natively, and by the
documented rule, there is one), and the call ends ``applied`` with exit 0 ("create 1 file"; F refused: "it holds
F/pipe"). The rename is half done: F2 exists with the regular files, F keeps them too.

Now the rename is refused whole (the directory stays, said), as for a FIFO the command made in a renamed tree."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support import serve
from support.boxed import SX, Person, run

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="no bwrap"),
]


def tree(root: Path) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, n), root) for d, ds, fs in os.walk(root) for n in ds + fs)


async def test_a_directory_holding_a_projects_fifo_renamed_stays_whole_and_its_rename_is_refused(
    tmp_path: Path,
) -> None:
    proj = tmp_path / "proj"
    (proj / "F").mkdir(parents=True)
    os.mkfifo(proj / "F" / "pipe")
    (proj / "F" / "data.txt").write_text("data\n")
    before = tree(proj)
    async with serve(SX, proj, audit=tmp_path / "audit.jsonl", elicitation_callback=Person()) as client:
        out = await run(client, "mv F F2", cwd=str(proj))
    after = tree(proj)
    # The documented outcome: the directory stays where it was, whole; the rename is refused, and said.
    assert after == before, f"before {before}, after {after}; result {out}"
    refused = {p["path"]: p["reason"] for p in out["changes"]["paths"] if p["action"] == "refused"}
    assert "renamed" in refused.get("F2", ""), out["changes"]
