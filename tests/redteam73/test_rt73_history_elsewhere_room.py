"""Red team 73, F3: the history on another file system (a small tmpfs of ours), the project on the main disk. Pre-images
are copied there. ``HistoryStore.room`` reckons the copied bytes plus 1 MiB of slack against that disk's free space,
but each kept file takes at least a block of data and a block of metadata there (``_ENTRY_DISK`` is counted against
the bound, not against the free space): a call deleting 600 files of a few bytes (about 5 MiB there) passes a check
of a few KiB, runs out half way, cannot write its rollback line and raises, leaving the project half applied.

Library level: what the server's apply runs. Promise: "a change set lands whole or not at all"; "a change set whose
previous contents alone exceed ... the free space of a history on another file system is not applied". Plain `rm`
of the project's own files in a temp dir (data)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_server_guard.changes.apply import Applier, NotApplied
from mcp_server_guard.files.history import HistoryStore
from support.copies import Copy, overlays_work
from support.small_disk import small_disk

pytestmark = pytest.mark.skipif(not overlays_work() or os.getuid() != 0, reason="needs root and overlays")

N = 600


def test_deleting_many_small_files_into_a_small_history_elsewhere_is_refused_or_whole(tmp_path: Path) -> None:
    copy = Copy(tmp_path / "c")
    for i in range(N):
        (copy.root / f"f{i:04}.txt").write_text(f"{i}\n")
    names = sorted(os.listdir(copy.root))
    changes = copy.run("rm f*.txt")
    with small_disk("3m") as disk:
        store = HistoryStore(disk / "history", 1 << 30)
        try:
            Applier(store).apply([changes], "00000000000a", copy.started)
            said = "applied"
        except NotApplied as exc:
            said = f"not applied: {exc.why}"
        except OSError as exc:
            said = f"raised {exc!r}"
        left = sorted(os.listdir(copy.root))
        store.close()
    assert (said == "applied" and not left) or (said != "applied" and left == names), (
        f"{said[:200]}: {N - len(left)} of {N} files deleted"
    )
    assert not said.startswith("raised"), said
