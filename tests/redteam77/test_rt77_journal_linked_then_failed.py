"""Red team 77: ``Journal.create`` links the journal to its name (``os.link``) and only then removes the temp name and
fsyncs the directory. When that last fsync fails (EIO on the history's disk, or anything raising there), the except
clause removes the temp name and closes the descriptor, but the journal stays under its real name, whole and
unlocked. The run answers NotApplied("its journal could not be written", kept=False): "nothing was applied". Yet
the journal names the call as unfinished (``Applier.unfinished``: the server keeps the copy for it), and the next
start of shell_exec — or any ``mcp-guard undo``, which recovers first — applies the whole plan: the tree becomes all
new for a call whose result said it failed and applied nothing (and that the model may retry).

The shape's lines are plain file operations on a temporary copy (data, never harmful)."""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from mcp_server_guard.changes.apply import Applier, NotApplied
from mcp_server_guard.changes.recovery import recover
from mcp_server_guard.files.history import HistoryStore
from mcp_server_guard.files.kept import fsync_dir
from support.copies import Copy, overlays_work
from support.fidelity import differences, snapshot

pytestmark = pytest.mark.skipif(not overlays_work() or os.getuid() != 0, reason="needs root and overlays")

SCRIPT = "echo new > new.txt; echo changed > old.txt"
AUDIT = "00000000000b"


def test_journal_left_by_a_failed_create_is_not_applied_later(monkeypatch: pytest.MonkeyPatch) -> None:
    base = Path(tempfile.mkdtemp(prefix="rt77-"))
    try:
        copy = Copy(base)
        (copy.root / "old.txt").write_text("old\n")
        before = snapshot(copy.root)
        copy.run(SCRIPT)

        def failing(directory: Path) -> None:
            if any(name.startswith("apply-") for name in os.listdir(str(directory))):
                raise OSError(errno.EIO, os.strerror(errno.EIO))  # the journal's directory cannot be synced
            fsync_dir(directory)

        monkeypatch.setattr("mcp_server_guard.changes.journal.fsync_dir", failing)
        store = HistoryStore(base / "history", 1 << 30)
        applier = Applier(store)
        with pytest.raises(NotApplied) as caught:
            applier.apply([copy.read()], AUDIT, copy.started)
        monkeypatch.setattr("mcp_server_guard.changes.journal.fsync_dir", fsync_dir)
        said = caught.value
        unfinished = applier.unfinished(AUDIT)
        store.close()
        assert snapshot(copy.root) == before or not differences(before, snapshot(copy.root))

        # The next start (or an undo's recovery) of the same directories.
        store = HistoryStore(base / "history", 1 << 30)
        try:
            recover(store, [str(copy.root)], [str(copy.upper)])
        finally:
            store.close()
        changed = differences(before, snapshot(copy.root))
        assert not changed or said.kept, (
            f"the call was answered {said.why!r} (kept={said.kept}: 'nothing was applied'), its journal left "
            f"(unfinished={unfinished}), and the next start applied it: {changed[:4]}"
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)
