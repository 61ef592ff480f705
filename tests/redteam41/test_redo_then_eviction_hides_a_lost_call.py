"""After a redo (undo of an undo), the original call's pre-images are kept again under their old ids but with the
*redo's* audit id in their metadata. Eviction groups entries by that audit id, so when the store later goes over a
bound it evicts "the redo" — removing the pre-images the *original* call's record names — and lists only the redo as
evicted. ``mcp-guard history`` then shows the original call as an ordinary, undoable call (not evicted, not undone),
and ``mcp-guard undo`` of it fails with HISTORY_BROKEN ("no history entry ...") instead of saying it was evicted.

Promised (docs/file_write.md): eviction takes whole calls and "`mcp-guard history` lists each evicted call as such
(its `undo` says it was evicted)".

To pass: a redo's re-kept entries must stay owned by the call whose record names them (keep them with that call's
audit id, or have eviction follow the records rather than the entries' ``audit_id``), so that the original call is
evicted — and listed — whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server_guard.changes.apply import Applier
from mcp_server_guard.files.history import HistoryStore
from support.copies import Copy, overlays_work
from support.redteam import mcp_guard

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")


def test_an_evicted_redo_leaves_the_original_call_listed_as_undoable_with_its_preimage_gone(tmp_path: Path) -> None:
    history = tmp_path / "history"
    store = HistoryStore(history, 1 << 30, 1000)
    copy = Copy(tmp_path / "p")
    (copy.root / "f.txt").write_text("v1\n")
    Applier(store).apply([copy.run("echo v2 > f.txt")], "a00000000001", copy.started)
    Applier(store).undo("a00000000001", "b00000000001", [str(copy.root)])  # undo
    Applier(store).undo("b00000000001", "b00000000002", [str(copy.root)])  # redo: a00000000001 is in force again
    assert (copy.root / "f.txt").read_text() == "v2\n"
    before = store.calls.read("a00000000001")["changes"][0]["before"]
    # Later calls take a store bounded to two entries over its bound: the oldest calls go.
    bounded = HistoryStore(history, 1 << 30, 2)
    for n in range(3, 6):
        other = Copy(tmp_path / f"q{n}")
        (other.root / "g.txt").write_text("old\n")
        Applier(bounded).apply([other.run("echo new > g.txt")], f"a0000000000{n}", other.started)
    assert not (history / f"{before}.json").exists()  # the bound took it: the call must say so
    listed = mcp_guard("history", "--history-dir", str(history))
    line = next((x for x in listed.stdout.splitlines() if x.startswith("a00000000001")), "")
    undone = mcp_guard("undo", "a00000000001", "--history-dir", str(history),
                       "--audit-log", str(tmp_path / "audit.jsonl"))  # fmt: skip
    assert "evicted" in line and "evicted" in undone.stderr, (
        f"the pre-image of call a00000000001 ({before}) was evicted as part of the redo b00000000002, yet `mcp-guard "
        f"history` lists the call as undoable: {line!r}; and its undo says: {undone.stderr.strip()!r}"
    )
