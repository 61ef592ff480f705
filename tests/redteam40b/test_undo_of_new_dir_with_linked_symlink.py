"""Undo: a call that makes a new directory and gives a project symlink a second name in it (``mkdir n && ln
ln.txt n/n4``; GNU ``ln`` links the symlink itself) lands as natively, and ``mcp-guard undo`` of it must undo it
exactly (docs/shell_exec.md "Undo": a conflict only where a path changed again afterwards). It once said
UNDO_CONFLICT on ``n``: the symlink in the new tree shared its inode with the copy's, and taking the copy away
after the call changed its ctime."""

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
