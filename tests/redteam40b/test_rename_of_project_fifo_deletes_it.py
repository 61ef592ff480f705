"""Fidelity: a FIFO that is already part of the project is data the command may rename. FIFOs a command makes are
never applied (docs/shell_exec.md "FIFOs, sockets and devices"), but renaming the project's own FIFO, or a
directory that holds one, must not delete it: natively ``mv fifo fifo2`` / ``mv d d2`` keeps it under its new name
("renames land as renames"). Through shell_exec the old name was deleted and the new one refused, so the project
lost its FIFO. A FIFO never lands under a name a command gave it, so the rename is refused whole: the project keeps
its FIFO where it was. FAILS when the FIFO is gone from both names."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from support.boxed import run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


# ``mv fifo fifo2`` (a new name) cannot be told from ``rm fifo; mkfifo fifo2`` by the change set: not covered.
@pytest.mark.parametrize(("command", "landed"), [("mv d d2", "d2/fifo")])
async def test_renaming_a_projects_fifo_keeps_it(workspace: Path, command: str, landed: str) -> None:
    os.mkfifo(workspace / "fifo")
    (workspace / "d").mkdir()
    os.mkfifo(workspace / "d" / "fifo")
    (workspace / "d" / "f.txt").write_text("f\n")
    async with shell(workspace) as client:
        out = await run(client, command)
    kept = [p for p in (landed, landed.replace("2", "")) if os.path.lexists(workspace / p)]
    assert kept and stat.S_ISFIFO(os.lstat(workspace / kept[0]).st_mode), (
        f"{command!r}: the project's FIFO is gone; {out['transaction']} {out['changes']['paths']}"
    )
