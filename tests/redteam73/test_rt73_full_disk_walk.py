"""Red team 73: the disk holding the project, its copies and the history (one small tmpfs, mounted in a temp dir
of ours) fills up completely at each fault point of an apply in turn (another process took the last page). What the
server does next is emulated exactly: whatever the apply raised, its copy is discarded (transactions._judged_apply:
``finally: self.discard(name)``). Then the filler goes, the next start runs (recover + sweep), and the tree must be
all old, or all new with a record whose undo is exact.

The shapes' lines are plain file operations on a temporary copy (data, never harmful)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from mcp_server_guard.audit import new_audit_id
from mcp_server_guard.changes.apply import Applier, NotApplied
from mcp_server_guard.changes.recovery import recover
from mcp_server_guard.files.history import HistoryError, HistoryStore
from support.copies import Copy, overlays_work
from support.fidelity import Tree, differences, snapshot
from support.small_disk import filled_at, small_disk

pytestmark = pytest.mark.skipif(not overlays_work() or os.getuid() != 0, reason="needs root and overlays")

OLD_NS = 1_000_000_000 * 10**9

SHAPES = {
    "create-and-delete": "for i in $(seq 12); do echo new$i > new$i.txt; done; rm old*.txt",
    "delete-and-rewrite": "rm old*.txt; echo after > edit.txt; rm -r tree",
}


def populate(root: Path) -> None:
    (root / "edit.txt").write_text("before\n")
    for i in range(12):
        (root / f"old{i}.txt").write_text(f"old {i}\n" * 50)
    (root / "tree" / "sub").mkdir(parents=True)
    for i in range(6):
        (root / "tree" / "sub" / f"a{i}.txt").write_text(f"a{i}\n")
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


def store_at(base: Path) -> HistoryStore:
    return HistoryStore(base / "history", 1 << 30)


def run_full_at(disk: Path, base: Path, script: str, n: int, labels: list[str]) -> str:
    """Apply with the disk filled at fault point ``n`` (0: never); what the apply said."""
    copy, _ = fresh(base, script)
    said = "applied"
    try:
        with filled_at(disk, n, labels):
            Applier(store_at(base)).apply([copy.read()], "00000000000a", copy.started)
    except NotApplied as exc:
        said = f"not applied: {exc.why}"
    except (OSError, HistoryError) as exc:
        said = f"raised {type(exc).__name__}: {exc}"
    finally:
        shutil.rmtree(copy.upper, ignore_errors=True)  # the server's ``finally: self.discard(name)``
    return said


def test_a_disk_full_at_any_step_of_an_apply_leaves_all_old_or_all_new_and_undoable() -> None:
    problems: list[str] = []
    with small_disk() as disk:
        for shape, script in SHAPES.items():
            labels: list[str] = []
            ref = disk / f"{shape}-ref"
            run_full_at(disk, ref, script, 0, labels)
            after = snapshot(Copy(ref).root)
            total = len(labels)
            assert total, "no fault point was seen"
            shutil.rmtree(ref)
            for n in range(1, total + 1):
                base = disk / f"{shape}-{n}"
                copy = Copy(base)
                populate(copy.root)
                before = snapshot(copy.root)
                shutil.rmtree(base)
                seen: list[str] = []
                said = run_full_at(disk, base, script, n, seen)
                where = f"{shape}: disk full at point {n} ({seen[n - 1] if len(seen) >= n else '?'}), {said[:120]}"
                (disk / "hog").unlink(missing_ok=True)
                store = store_at(base)
                try:
                    recover(store, [str(base / "root")], [str(base / "upper")])
                    store.sweep()
                    now = snapshot(base / "root")
                    if not differences(before, now):
                        pass
                    elif differences(after, now):
                        problems.append(
                            f"{where}: neither all old nor all new: {differences(after, now)[:4]} "
                            f"/ vs old: {differences(before, now)[:4]}"
                        )
                    else:
                        try:
                            Applier(store).undo("00000000000a", new_audit_id(), [str(base / "root")])
                        except Exception as exc:
                            problems.append(f"{where}: all new, but undo fails: {type(exc).__name__}: {exc}")
                        else:
                            d = differences(before, snapshot(base / "root"))
                            if d:
                                problems.append(f"{where}: undo not exact: {d[:4]}")
                finally:
                    store.close()
                    shutil.rmtree(base, ignore_errors=True)
    assert not problems, "\n".join(problems[:30])


def undo_full_at(disk: Path, store: HistoryStore, root: Path, n: int, labels: list[str]) -> str:
    """Undo call 00000000000a with the disk filled at fault point ``n`` of the undo (0: never); what it said."""
    said = "undone"
    try:
        with filled_at(disk, n, labels):
            Applier(store).undo("00000000000a", new_audit_id(), [str(root)])
    except NotApplied as exc:
        said = f"not undone: {exc.why}"
    except (OSError, HistoryError) as exc:
        said = f"raised {type(exc).__name__}: {exc}"
    return said


def test_a_disk_full_at_any_step_of_an_undo_leaves_the_call_or_its_undo_whole() -> None:
    """The undo either happened whole or not at all (then a second undo, with room again, is exact)."""
    problems: list[str] = []
    script = SHAPES["delete-and-rewrite"]
    with small_disk() as disk:
        total = 0
        for n in range(0, 64):
            if n and n > total:
                break
            base = disk / f"undo-{n}"
            copy, before = fresh(base, script)
            store = store_at(base)
            try:
                Applier(store).apply([copy.read()], "00000000000a", copy.started)
                shutil.rmtree(copy.upper, ignore_errors=True)
                after = snapshot(copy.root)
                seen: list[str] = []
                said = undo_full_at(disk, store, copy.root, n, seen)
                if n == 0:
                    total = len(seen)
                    assert not differences(before, snapshot(copy.root)), "the undo with room is not exact"
                    continue
                where = f"disk full at undo point {n} ({seen[n - 1] if len(seen) >= n else '?'}), {said[:160]}"
                (disk / "hog").unlink(missing_ok=True)
                recover(store, [str(copy.root)], [str(copy.upper)])
                now = snapshot(copy.root)
                if not differences(before, now):
                    continue  # undone whole
                if differences(after, now):
                    problems.append(f"{where}: neither undone nor as the call left it: {differences(after, now)[:4]}")
                    continue
                try:
                    Applier(store).undo("00000000000a", new_audit_id(), [str(copy.root)])
                except Exception as exc:
                    problems.append(f"{where}: the call stays, but undoing it again fails: {exc}")
                    continue
                if d := differences(before, snapshot(copy.root)):
                    problems.append(f"{where}: the second undo is not exact: {d[:4]}")
            finally:
                store.close()
                shutil.rmtree(base, ignore_errors=True)
    assert total, "no fault point was seen"
    assert not problems, "\n".join(problems[:30])
