"""Red team 60 F4: a disk full (ENOSPC) while a deleted tree's pre-image is made independent of a name outside it
(``kept.unshare``, run by ``HistoryStore.keep`` after ``keep_data`` moved the tree into the history). The error
leaves ``keep`` after the tree is gone from the project, so the delete step returns no record
(``apply.run_step``: OSError -> [], a conflict) and ENOSPC is fatal: the apply goes back on the steps it recorded
— not this one. Promise: a failed apply is all-old (or, if it says success, undoable). The command's line is data
(rt60.json)."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from mcp_server_guard.audit import new_audit_id
from mcp_server_guard.changes.apply import Applier, NotApplied
from mcp_server_guard.files import copying, kept
from mcp_server_guard.files.history import HistoryStore
from support.copies import Copy, overlays_work
from support.fidelity import differences, snapshot

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
SCRIPTS = json.loads((Path(__file__).parent / "rt60.json").read_text())


def test_a_full_disk_while_a_deleted_tree_is_unshared_leaves_the_tree_or_a_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = Copy(tmp_path / "c")
    (copy.root / "tree").mkdir()
    (copy.root / "tree" / "a.txt").write_text("a\n")
    (copy.root / "keep.txt").write_text("keep\n")
    os.link(copy.root / "keep.txt", copy.root / "tree" / "keep-link.txt")
    before = snapshot(copy.root)
    changes = copy.run(SCRIPTS["delete-tree"])

    real = copying.copy_into

    def copy_into(*args: object, **kwargs: object) -> str:
        if str(kwargs.get("temp", "")).endswith("mcp-guard-unshare.tmp"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(kept, "copy_into", copy_into)
    store = HistoryStore(tmp_path / "history", 1 << 30)
    call = new_audit_id()
    try:
        outcome = Applier(store).apply([changes], call, copy.started)
    except NotApplied as exc:
        diff = differences(before, snapshot(copy.root))
        assert not diff, f"the apply said it was not applied ({exc.why}), yet: " + "; ".join(diff[:5])
        return
    monkeypatch.setattr(kept, "copy_into", real)
    records = [r.path for r in outcome.applied]
    assert str(copy.root / "tree") in records or not outcome.conflicts, (
        f"the tree is gone from the project, in no record: {outcome.conflicts}"
    )
    Applier(store).undo(call, new_audit_id(), [str(copy.root)])
    diff = differences(before, snapshot(copy.root))
    assert not diff, "the undo said success, yet: " + "; ".join(diff[:5])
