"""Red team 61 F4: with the history on another file system, an undo of ``mv tree t; mv edit.txt tree; mv t edit.txt``
(a file and a directory trading names; data: rt61_walk.json) killed just after a swap step copied its pre-image back
(``taken <entry>``). The step had set the call's directory aside, copied it into the history and removed it; the
pre-image copied back then took the freed inode number. The next start's replay compared numbers only
(``revert._swapped_before``), took the step for not done, tried to keep the file as the tree, failed, and went back
half: ``tree`` the call's file, ``edit.txt`` the old file, the old tree in neither place, and a new undo refused.
Now a keep that moved what was there away (a tree, or what a tree replaces) left the name free: whatever is there
came after it. The inode number's reuse is made certain here (the kept entry said to have come from what is at the
name now); the walk of the shape, killed at every point, is also in tests/changes/test_crash_walk_elsewhere.py."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from mcp_server_guard.changes import revert, steps
from mcp_server_guard.changes.nofollow import lstat_beneath
from mcp_server_guard.files.history import HistoryStore
from support.crashwalk import crash_walk
from support.elsewhere import history_elsewhere

walk = crash_walk("crash_walk_rt61")
SHAPES = json.loads((Path(__file__).parent / "rt61_walk.json").read_text())
pytestmark = walk.pytestmark
real_kept_from = steps.kept_from


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_attack_an_undo_killed_after_a_copy_back_that_took_a_freed_inode_number_finishes_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    history_elsewhere(monkeypatch, tmp_path)
    script = SHAPES[shape]

    def undo(root: Path, store: object) -> object:
        return lambda: walk.Applier(store).undo(walk.audit_id(1), walk.audit_id(2), [str(root)])

    copy, _before, _after = walk.applied(tmp_path / "traced", script)
    trace = tmp_path / "trace"
    assert (
        os.waitstatus_to_exitcode(walk.in_child(0, str(trace), undo(copy.root, walk.store_at(tmp_path / "traced"))))
        == 0
    )
    steps = trace.read_text().splitlines()
    swaps, step = [], ""
    for n, line in enumerate(steps, 1):
        step = line if " step " in f" {line}" else step
        if " taken " in line and " swap " in step:
            swaps.append(n)  # just after a swap step copied its pre-image back
    assert swaps, steps
    for n in swaps:
        base = tmp_path / f"k{n}"
        copy, before, _after = walk.applied(base, script)
        status = walk.in_child(n, "", undo(copy.root, walk.store_at(base)))
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, steps[n - 1]

        def reused(history: HistoryStore, entry_id: str) -> tuple[int, ...]:
            """As if what is at the entry's path now had the number of what the entry kept (freed, then reused)."""
            now = lstat_beneath("/", history.metadata(entry_id).path.lstrip("/"))
            return (now.st_dev, now.st_ino) if now is not None else real_kept_from(history, entry_id)

        with monkeypatch.context() as patched:
            patched.setattr(revert, "kept_from", reused)
            walk.next_start(base, copy).close()
        diff = walk.same(before, walk.snapshot(copy.root))
        assert not diff, f"undo killed at {steps[n - 1]}: the tree is not all-old: {diff[:6]}"
