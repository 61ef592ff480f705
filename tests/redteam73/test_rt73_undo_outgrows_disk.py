"""Red team 73, F2: an undo on a disk that is nearly full (project, copies and history on one small tmpfs of ours).
The undo of a call that rewrote many files keeps each rewritten version (a block of metadata each) before it puts
the old one back; ``undo_room`` counts the history's bounds, not the free disk (the history is on the project's file
system). Promise (docs/shell_exec.md, Undo): "exits 0 only when every path is back exactly ... a step that fails
midway puts back what the undo had done ... and leaves the call not undone, so it can be tried again".

Library level (the code ``mcp-guard undo`` runs). Plain appends to files in the temp dir (data)."""

from __future__ import annotations

import os
import shutil

import pytest

from mcp_server_guard.audit import new_audit_id
from mcp_server_guard.changes.apply import Applier, NotApplied
from mcp_server_guard.changes.recovery import recover
from mcp_server_guard.files.history import HistoryError, HistoryStore
from support.copies import Copy, overlays_work
from support.small_disk import files, fill_leaving, small_disk

pytestmark = pytest.mark.skipif(not overlays_work() or os.getuid() != 0, reason="needs root and overlays")

N = 300
CALL = "00000000000a"


def test_an_undo_that_runs_out_of_disk_is_exact_or_changes_nothing() -> None:
    problems: list[str] = []
    for free_pages in range(40, 400, 30):
        with small_disk() as disk:
            copy = Copy(disk / "c")
            for i in range(N):
                (copy.root / f"f{i:04}.txt").write_text(f"file {i}\n")
            before = files(copy.root)
            copy.run("for f in f*.txt; do echo new >> $f; done")
            store = HistoryStore(disk / "history", 1 << 30)
            Applier(store).apply([copy.read()], CALL, copy.started)
            shutil.rmtree(copy.upper)
            after = files(copy.root)
            fill_leaving(disk, free_pages * 4096)
            said = "undone"
            try:
                Applier(store).undo(CALL, new_audit_id(), [str(copy.root)])
            except (NotApplied, HistoryError) as exc:
                said = f"refused: {exc}"
            except OSError as exc:
                said = f"raised {exc!r}"
            now = files(copy.root)
            back = sum(1 for k in before if now.get(k) == before[k])
            if said == "undone" and now != before:
                problems.append(f"{free_pages} pages free: undo said success, {back} of {N} back")
            elif said != "undone" and now != after:
                problems.append(f"{free_pages} pages free: {said[:100]}, yet {back} of {N} are back (half undone)")
            # Room again, the next `mcp-guard undo` (it finishes a dead undo first), then the call must undo exactly.
            (disk / "hog").unlink()
            store.close()
            store = HistoryStore(disk / "history", 1 << 30)
            recover(store, [str(copy.root)], [])
            now = files(copy.root)
            if now not in (before, after):
                problems.append(
                    f"{free_pages} pages free: after recovery neither undone nor as the call left it: "
                    f"{sum(1 for k in before if now.get(k) == before[k])} of {N} back"
                )
            elif now == after:
                try:
                    Applier(store).undo(CALL, new_audit_id(), [str(copy.root)])
                except Exception as exc:
                    problems.append(f"{free_pages} pages free: with room again the undo fails: {exc!r}"[:300])
                else:
                    if files(copy.root) != before:
                        problems.append(f"{free_pages} pages free: with room again the undo is not exact")
            store.close()
    assert not problems, "\n".join(problems)
