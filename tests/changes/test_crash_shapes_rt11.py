"""Red team 11: the crash walk (tests/changes/test_crash_walk.py) over shapes whose steps go through
``nofollow.held``'s new ctime check and the name notes (8df9f9c): names of files with several names made, replaced
and taken away, a mode set on such a file, in one call. Killed at every step, the next start must finish the
apply whole (a replay finding its own half-done steps must not take them for someone else's change: the journal's
records name every file whose ctime the dead run moved), and ``undo`` after such a replay must put the tree back
exactly (a deletion the dead run finished is recorded with the file it was, not the history's copy of it: else the
undo brought a name of a shared file back as a file of its own, with the mode the call gave it). An undo killed at
every step is finished or gone back whole."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from support.crashwalk import crash_walk

walk = crash_walk("crash_walk_rt11")

pytestmark = walk.pytestmark

SHAPES = {
    "relink-over-a-shared-name": "ln -f edit.txt tree/b.txt; ln -f keep.txt tree/b-link.txt",
    "remove-names-of-shared-files": "rm tree/b.txt keep.txt; chmod 600 tree/b-link.txt",
    "rewrite-a-shared-file-and-rename-a-name": "echo more >> tree/b.txt; mv tree/b-link.txt moved.txt",
    "mode-and-name-of-a-shared-file": "chmod 600 keep.txt; ln keep.txt third; rm tree/sub/keep-link.txt",
    # red team 16 F5: a replayed deletion of one name moved the other's ctime: not someone else's change
    "rename-rewrite-and-remove-the-other-name": "mv tree/b.txt n.txt; echo z >> n.txt; rm tree/b-link.txt",
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_an_apply_killed_at_any_step_is_finished_whole(tmp_path: Path, shape: str) -> None:
    script = SHAPES[shape]

    def apply(copy: object, store: object):  # type: ignore[no-untyped-def]
        changes = copy.read()  # type: ignore[attr-defined]
        return lambda: walk.Applier(store).apply([changes], walk.audit_id(1), copy.started)  # type: ignore[attr-defined]

    steps = walk.points(tmp_path / "traced", script, apply)
    problems: list[str] = []
    for n in range(1, len(steps) + 1):
        base = tmp_path / f"k{n}"
        copy, before = walk.fresh(base, script)
        status = walk.in_child(n, "", apply(copy, walk.store_at(base)))
        where = f"killed at {steps[n - 1]}"
        if not (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL):
            problems.append(f"{where}: the child was not killed there (status {status})")
            continue
        store = walk.next_start(base, copy)
        now = walk.snapshot(copy.root)
        if not walk.same(before, now):
            continue
        after = walk.reference(tmp_path / f"r{n}", script)
        diff = walk.same(after, now)
        if diff:
            problems += [f"{where}: neither all old nor all new: {d}" for d in diff[:5]]
            continue
        problems += walk.undo_problems(store, copy.root, walk.audit_id(1), before, after, where)
        store.close()
    assert not problems, "\n".join(problems[:40])


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_an_undo_of_these_shapes_killed_at_any_step_is_finished_or_gone_back_whole(
    tmp_path: Path, shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(walk.SHAPES, shape, SHAPES[shape])
    walk.test_an_undo_killed_at_any_step_is_finished_or_gone_back_whole(tmp_path, shape)
