"""Crash safety, the way SQLite tests it: an apply, an undo and a file_write killed (SIGKILL) at every one of their
steps in turn, then the next start (recover, the history's sweep) and a check of what is left.

Every step that changes the real tree or the history store passes a numbered fault point
(``mcp_server_guard.faults``): a first run traces them, then for each N a forked child runs the same operation on
a fresh copy and kills itself at point N. After the next start the tree must be all-old or all-new (names, types,
bytes, modes, hard links, set mtimes, user.* attributes), the history must hold every pre-image, ``undo`` must
put the pre-state back exactly and an undo of that undo the post-state.

The shapes' lines are plain file operations on a temporary copy (data, never harmful)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from mcp_server_guard import faults
from mcp_server_guard.audit import new_audit_id
from mcp_server_guard.changes.apply import Applier, NotApplied
from mcp_server_guard.changes.recovery import recover
from mcp_server_guard.files.history import HistoryError, HistoryStore
from support.copies import Copy, overlays_work
from support.fidelity import Tree, differences, snapshot

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")

OLD_NS = 1_000_000_000 * 10**9  # 2001: every pre-state entry's mtime, so that undo's times compare exactly
SET_XATTR = "python3 -c 'import os, sys; os.setxattr(sys.argv[1], sys.argv[2], sys.argv[3].encode())'"

SHAPES = {
    "create-many": "for i in $(seq 10); do echo new$i > new$i.txt; done; mkdir -p made/deep; echo x > made/deep/x",
    "delete-a-tree": "rm -r tree",
    "rewrite": "echo after > edit.txt; printf more >> keep.txt; : > tree/b.txt",
    "rename-a-directory": "mv tree moved; mv edit.txt moved/edit.txt",
    "modes-times-links-attributes": (
        f"chmod 600 keep.txt; touch -d 2003-03-03 edit.txt; {SET_XATTR} keep.txt user.k v; chmod 700 tree; "
        "ln keep.txt tree/hard; ln -s keep.txt sym; echo n > tree/sub/n.txt; touch -d 2004-04-04 tree/sub"
    ),
    "one-large-file": "yes a-large-file | head -c 3000000 > big.bin; echo after > edit.txt",
    # two files with several names swapped through a temporary name: a name kept beside one while the others are made
    "swap-linked-files": "mv tree/b.txt t; mv keep.txt tree/b.txt; mv t keep.txt",
    # a file with several names replaced by a directory (red team 58 F2: the replayed step recorded no group)
    "linked-file-to-dir": "rm keep.txt; mkdir keep.txt; echo d > keep.txt/in",
}


def populate(root: Path) -> None:
    (root / "keep.txt").write_text("keep\n")
    (root / "edit.txt").write_text("before\n")
    (root / "tree" / "sub").mkdir(parents=True)
    for i in range(4):
        (root / "tree" / "sub" / f"a{i}.txt").write_text(f"a{i}\n")
    (root / "tree" / "b.txt").write_text("b\n")
    os.setxattr(root / "tree" / "b.txt", "user.note", b"old")
    os.link(root / "tree" / "b.txt", root / "tree" / "b-link.txt")
    os.link(root / "keep.txt", root / "tree" / "sub" / "keep-link.txt")
    (root / "big.bin").write_bytes(bytes(range(256)) * 4000)
    (root / "tree" / "b.txt").chmod(0o640)
    for directory, dirs, files in os.walk(root, topdown=False):
        for name in files + dirs:
            os.utime(os.path.join(directory, name), ns=(OLD_NS, OLD_NS), follow_symlinks=False)
    os.utime(root, ns=(OLD_NS, OLD_NS))


def fresh(base: Path, script: str) -> tuple[Copy, Tree]:
    copy = Copy(base)
    populate(copy.root)
    before = snapshot(copy.root)
    copy.run(script)
    return copy, before


def in_child(kill_at: int, trace: str, work: Callable[[], object]) -> int:
    """Run ``work`` in a forked child killed at fault point ``kill_at`` (0: never); its wait status."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            faults.reset(kill_at, trace)
            work()
        except BaseException:  # the child must never return into pytest
            code = 1
        os._exit(code)
    deadline = time.monotonic() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise AssertionError(f"the child killed at point {kill_at} ran for more than 60 s")
        time.sleep(0.01)


def store_at(base: Path) -> HistoryStore:
    return HistoryStore(base / "history", 1 << 30)


def next_start(base: Path, copy: Copy) -> HistoryStore:
    """What the next server start does: finish (or go back on) what the dead one left, then sweep the history."""
    store = store_at(base)
    recover(store, [str(copy.root)], [str(copy.upper)])
    store.sweep()
    return store


def points(base: Path, script: str, work: Callable[[Copy, HistoryStore], Callable[[], object]]) -> list[str]:
    copy, _before = fresh(base, script)
    trace = base / "trace"
    status = in_child(0, str(trace), work(copy, store_at(base)))
    assert os.waitstatus_to_exitcode(status) == 0, "the traced run failed"
    return trace.read_text().splitlines()


def same(expected: Tree, now: Tree) -> list[str]:
    return differences(expected, now)


def undo_problems(store: HistoryStore, root: Path, call: str, before: Tree, after: Tree, where: str) -> list[str]:
    """Undo ``call`` (the pre-state must come back exactly), then undo that undo (the post-state must)."""
    undo_id, redo_id = new_audit_id(), new_audit_id()
    try:
        Applier(store).undo(call, undo_id, [str(root)])
    except (HistoryError, NotApplied) as exc:
        return [f"{where}: undo failed: {exc}"]
    problems = [f"{where}: after undo: {d}" for d in same(before, snapshot(root))]
    try:
        Applier(store).undo(undo_id, redo_id, [str(root)])
    except (HistoryError, NotApplied) as exc:
        return [*problems, f"{where}: redo failed: {exc}"]
    return problems + [f"{where}: after redo: {d}" for d in same(after, snapshot(root))]


def audit_id(n: int) -> str:
    return f"{n:012x}"


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_an_apply_killed_at_any_step_is_finished_whole_and_undoes_exactly(tmp_path: Path, shape: str) -> None:
    script = SHAPES[shape]

    def apply(copy: Copy, store: HistoryStore) -> Callable[[], object]:
        changes = copy.read()
        return lambda: Applier(store).apply([changes], audit_id(1), copy.started)

    # The run nobody kills: what "all new" is.
    steps = points(tmp_path / "traced", script, apply)
    assert len(steps) >= 3, steps
    problems: list[str] = []
    for n in range(1, len(steps) + 1):
        base = tmp_path / f"k{n}"
        copy, before = fresh(base, script)
        status = in_child(n, "", apply(copy, store_at(base)))
        where = f"killed at {steps[n - 1]}"
        if not (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL):
            problems.append(f"{where}: the child was not killed there (status {status})")
            continue
        store = next_start(base, copy)
        now = snapshot(copy.root)
        if not same(before, now):
            if (store.directory / "calls" / f"{audit_id(1)}.json").exists():
                problems.append(f"{where}: the tree is all old but a call record says otherwise")
            continue  # killed before its journal: nothing happened
        after = reference(tmp_path / f"r{n}", script)
        diff = same(after, now)
        if diff:
            problems += [f"{where}: neither all old nor all new: {d}" for d in diff[:5]]
            continue
        problems += undo_problems(store, copy.root, audit_id(1), before, after, where)
        store.close()
    assert not problems, "\n".join(problems[:40])


_REFERENCES: dict[str, Tree] = {}


def reference(base: Path, script: str) -> Tree:
    """The tree an apply nobody killed leaves (once per shape)."""
    if script not in _REFERENCES:
        copy, _before = fresh(base, script)
        Applier(store_at(base)).apply([copy.read()], audit_id(1), copy.started)
        _REFERENCES[script] = snapshot(copy.root)
    return _REFERENCES[script]


def applied(base: Path, script: str) -> tuple[Copy, Tree, Tree]:
    """A fresh copy whose change set was applied (as call 1): (copy, the tree before, the tree after)."""
    copy, before = fresh(base, script)
    Applier(store_at(base)).apply([copy.read()], audit_id(1), copy.started)
    return copy, before, snapshot(copy.root)


@pytest.mark.parametrize(
    "shape", ["delete-a-tree", "modes-times-links-attributes", "rename-a-directory", "rewrite", "swap-linked-files"]
)
def test_an_undo_killed_at_any_step_is_finished_or_gone_back_whole(tmp_path: Path, shape: str) -> None:
    script = SHAPES[shape]
    undo_id = audit_id(2)

    def undo(root: Path, store: HistoryStore) -> Callable[[], object]:
        return lambda: Applier(store).undo(audit_id(1), undo_id, [str(root)])

    copy, _before, _after = applied(tmp_path / "traced", script)
    trace = tmp_path / "trace"
    assert os.waitstatus_to_exitcode(in_child(0, str(trace), undo(copy.root, store_at(tmp_path / "traced")))) == 0
    steps = trace.read_text().splitlines()
    problems: list[str] = []
    for n in range(1, len(steps) + 1):
        base = tmp_path / f"k{n}"
        copy, before, after = applied(base, script)
        status = in_child(n, "", undo(copy.root, store_at(base)))
        where = f"undo killed at {steps[n - 1]}"
        if not (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL):
            problems.append(f"{where}: the child was not killed there (status {status})")
            continue
        store = next_start(base, copy)
        now = snapshot(copy.root)
        undone = store.calls.read(audit_id(1)).get("undone_by", "")
        if not same(before, now):
            # Finished by the start: the call is undone, and undoing the undo brings the call's tree back.
            if undone != undo_id:
                problems.append(f"{where}: the tree is back but the call is not marked undone ({undone!r})")
                continue
            Applier(store).undo(undo_id, audit_id(3), [str(copy.root)])
            problems += [f"{where}: after redo: {d}" for d in same(after, snapshot(copy.root))]
        elif not same(after, now):
            # Never started, or gone back: the call stands and can be undone.
            if undone:
                problems.append(f"{where}: the call's tree stands but it is marked undone by {undone}")
                continue
            problems += undo_problems(store, copy.root, audit_id(1), before, after, where)
        else:
            problems += [f"{where}: neither undone nor as the call left it: {d}" for d in same(before, now)[:5]]
        store.close()
    assert not problems, "\n".join(problems[:40])
