"""Fidelity and undo: a call whose only effect is a directory's modification time. ``touch -d 2001-01-01 d``: the
time lands in the real tree (as natively) but the result says ``transaction: "unchanged"`` and ``mcp-guard undo
<auditId>`` answers HISTORY_NOT_FOUND ("no call ... changed files"): a change to the project that no history
records and no undo can take back. ``touch -d 2001-01-01 .`` (the root): the time does not land at all, and the
result says "unchanged" (natively the root's time is 2001) (docs/shell_exec.md: every result that applied
something says how to undo it; undo puts back "the directories' times as they were"). With any other change in
the same call it is recorded and undone. FAILS on the current code."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from mcp_server_guard.files.history import HistoryError
from support.boxed import run, shell, undo

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

Y2001 = 978_307_200 * 10**9


@pytest.mark.parametrize("target", ["d", "."])
async def test_a_directory_time_set_by_a_call_is_recorded_and_undone(workspace: Path, target: str) -> None:
    (workspace / "d").mkdir()
    (workspace / "d" / "e").write_text("e\n")
    before = os.stat(workspace / target).st_mtime_ns
    async with shell(workspace) as client:
        out = await run(client, f"TZ=UTC touch -d '2001-01-01 00:00:00' {target}")
    landed = os.stat(workspace / target).st_mtime_ns
    try:
        undo_id, why = undo(out["auditId"])
    except HistoryError as exc:
        undo_id, why = "", str(exc)
    now = os.stat(workspace / target).st_mtime_ns
    assert (out["transaction"], landed, bool(undo_id), now) == ("applied", Y2001, True, before), (
        f"transaction {out['transaction']}, {target}'s time landed as {landed} (2001: {Y2001}); undo: {why!r}; "
        f"time after the undo {now}, before the call {before}"
    )
