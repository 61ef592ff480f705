"""Red team 75 (LOW): on a nearly full disk (history on the project's file system), a call that only creates one small
file keeps no previous contents at all, yet it is refused saying "keeping the previous contents needs ..." (the room
check now counts the call's record and a 1 MiB slack against the history's disk for every call). The refusal may be
right (a run keeps room to go back); its reason should say what the room is for.

The shape's line is a plain file operation on a temporary copy (data, never harmful)."""

from __future__ import annotations

import os

import pytest

from mcp_server_guard.changes.apply import Applier, NotApplied
from mcp_server_guard.files.history import HistoryStore
from support.copies import Copy, overlays_work
from support.small_disk import fill_leaving, small_disk

pytestmark = pytest.mark.skipif(not overlays_work() or os.getuid() != 0, reason="needs root and overlays")


def test_a_call_that_keeps_nothing_is_not_refused_for_keeping_previous_contents() -> None:
    with small_disk() as disk:
        copy = Copy(disk / "a")
        copy.run("echo hello > new.txt")
        store = HistoryStore(disk / "a" / "history", 1 << 30)
        store.calls.directory.mkdir(parents=True, exist_ok=True)
        fill_leaving(disk, 600 << 10)
        try:
            Applier(store).apply([copy.read()], "00000000000d", copy.started)
        except NotApplied as exc:
            why = exc.why
        else:
            why = ""
        finally:
            store.close()
    assert "previous contents" not in why, f"refused with: {why}"
