"""Undo: a call that makes a new directory and gives a project symlink a second name in it (``mkdir n && ln
ln.txt n/n4``; GNU ``ln`` links the symlink itself) lands as natively, but ``mcp-guard undo`` of it is refused
with UNDO_CONFLICT on ``n`` although nothing changed after the call (docs/shell_exec.md "Undo": every applied call
can be undone exactly; a conflict only where a path changed again afterwards). The same with a regular file, or
the symlink linked at the top level, undoes fine. FAILS on the current code."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.boxed import run, shell, snap, undo

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


async def test_undo_of_a_new_dir_holding_a_second_name_of_a_symlink(workspace: Path) -> None:
    (workspace / "a.txt").write_text("a\n")
    os.symlink("a.txt", workspace / "ln.txt")
    before = snap(workspace)
    async with shell(workspace) as client:
        out = await run(client, "mkdir n && ln ln.txt n/n4")
    assert out["transaction"] == "applied", out
    assert os.readlink(workspace / "n" / "n4") == "a.txt"
    after = snap(workspace)
    undo_id, why = undo(out["auditId"])
    assert undo_id, f"undo refused though nothing changed since the call: {why}"
    assert snap(workspace) == before
    redo_id, why = undo(undo_id)
    assert redo_id, why
    assert snap(workspace) == after
