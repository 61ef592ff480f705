"""Escape/fidelity: a project file carrying ``user.overlay.whiteout`` in a directory carrying
``user.overlay.opaque=x`` is data, shown to commands as the host has it (docs/shell_exec.md: "nothing is hidden or
redirected"; the server escapes such entries on each copy). A command deletes the file and ``mcp-guard undo``
(another process) puts it back with its attributes: the server learns it from the undo's note in the history store
before its next call, and later commands see the file. (It once stayed hidden for as long as the server ran.)"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from support.boxed import run, shell, undo

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

LOOK = "stat ovd/wh >/dev/null 2>&1 && echo seen; touch .ran"


async def test_undo_of_deleting_a_marked_file_leaves_it_hidden_from_later_commands(workspace: Path) -> None:
    (workspace / "ovd").mkdir()
    (workspace / "ovd" / "keep").write_text("keep\n")
    (workspace / "ovd" / "wh").write_text("")
    os.setxattr(workspace / "ovd", "user.overlay.opaque", b"x")
    os.setxattr(workspace / "ovd" / "wh", "user.overlay.whiteout", b"y")
    async with shell(workspace) as client:
        with anyio.move_on_after(30):  # the server's walk finds the marked entries in the background
            while "seen" not in (await run(client, LOOK))["stdout"]:
                await anyio.sleep(0.05)
        assert "seen" in (await run(client, LOOK))["stdout"], "the marked file was never shown (precondition)"
        out = await run(client, "rm ovd/wh")
        assert out["transaction"] == "applied", out
        undo_id, why = await anyio.to_thread.run_sync(undo, out["auditId"])
        assert undo_id, why
        assert (workspace / "ovd" / "wh").exists(), "undo did not put the file back"
        seen = ""
        with anyio.move_on_after(10):
            while "seen" not in (seen := (await run(client, LOOK))["stdout"]):
                await anyio.sleep(0.2)
    assert "seen" in seen, "after the undo, ovd/wh is in the project but hidden from every command on a copy"
