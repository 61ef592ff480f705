"""Red team 75: the disk fills at a step of an apply (the run turns round and gives its reserve back), and the filler
takes the reserve's room too before the rollback line is written (another process still writing). The run goes back
all the same with no rollback line in its journal; when it is then killed (or its record cannot be written) the
journal left says "these steps are done" with no word of going back, and the next start finishes the plan forward,
skipping the steps it takes as done although they were put back.

The shape's lines are plain file operations on a temporary copy (data, never harmful)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from mcp_server_guard import faults
from mcp_server_guard.audit import new_audit_id
from mcp_server_guard.changes.apply import Applier, NotApplied
from mcp_server_guard.changes.recovery import recover
from mcp_server_guard.files.history import HistoryError, HistoryStore
from support.copies import Copy, overlays_work
from support.fidelity import Tree, differences, snapshot
from support.small_disk import fill, small_disk

pytestmark = pytest.mark.skipif(not overlays_work() or os.getuid() != 0, reason="needs root and overlays")

OLD_NS = 1_000_000_000 * 10**9
SCRIPT = "rm old*.txt"
# new files, one rewritten, some deleted (a going back that the full disk stops halfway: its removals need room)
MIXED = (
    "for i in $(seq 12); do echo new$i > new$i.txt; done; echo x >> old0.txt; rm old1*.txt old2.txt old3.txt old4.txt"
)


class Killed(BaseException):
    """The server dies here (SIGKILL, emulated: nothing after this point runs, the journal stays)."""


def populate(root: Path) -> None:
    for i in range(12):
        (root / f"old{i}.txt").write_text(f"old {i}\n" * 50)
    for directory, dirs, files in os.walk(root, topdown=False):
        for name in files + dirs:
            os.utime(os.path.join(directory, name), ns=(OLD_NS, OLD_NS), follow_symlinks=False)
    os.utime(root, ns=(OLD_NS, OLD_NS))


def attempt(
    disk: Path, base: Path, fail_step: int, kill_back: int | None, script: str = SCRIPT
) -> tuple[str, list[str]]:
    """Apply ``rm old*.txt``: the disk fills at step ``fail_step``, again at "rollback"; killed at the
    ``kill_back``-th step of going back (None: never)."""
    copy = Copy(base)
    populate(copy.root)
    copy.run(script)
    labels: list[str] = []
    backs = 0

    def point(label: str) -> None:
        nonlocal backs
        labels.append(label)
        if label.startswith(f"step {fail_step} "):
            fill(disk)
        if label == "rollback":
            fill(disk)  # the filler goes on writing: the reserve's room is taken too
        if label.startswith("back ") and len(label.split()) > 2:
            if kill_back is not None and backs == kill_back:
                raise Killed
            backs += 1

    said = "applied"
    old = faults.point
    faults.point = point
    try:
        Applier(HistoryStore(base / "history", 1 << 30)).apply([copy.read()], "00000000000a", copy.started)
    except NotApplied as exc:
        said = f"not applied: {exc.why}"
    except Killed:
        said = "killed"
    except (OSError, HistoryError) as exc:
        said = f"raised {type(exc).__name__}: {exc}"
    finally:
        faults.point = old
    return said, labels


def next_start(disk: Path, base: Path) -> None:
    (disk / "hog").unlink(missing_ok=True)
    store = HistoryStore(base / "history", 1 << 30)
    try:
        recover(store, [str(base / "root")], [str(base / "upper")])
        store.sweep()
    finally:
        store.close()


def check(base: Path, before: Tree, after: Tree, where: str) -> list[str]:
    now = snapshot(base / "root")
    if not differences(before, now):
        return []
    if differences(after, now):
        return [f"{where}: neither all old nor all new: vs new {differences(after, now)[:6]}"]
    store = HistoryStore(base / "history", 1 << 30)
    try:
        Applier(store).undo("00000000000a", new_audit_id(), [str(base / "root")])
    except Exception as exc:
        return [f"{where}: all new, but its undo fails: {type(exc).__name__}: {exc}"]
    finally:
        store.close()
    if d := differences(before, snapshot(base / "root")):
        return [f"{where}: all new, undo not exact: {d[:4]}"]
    return []


def reference(disk: Path, script: str = SCRIPT) -> tuple[Tree, Tree]:
    base = disk / "ref"
    copy = Copy(base)
    populate(copy.root)
    before = snapshot(copy.root)
    copy.run(script)
    Applier(HistoryStore(base / "history", 1 << 30)).apply([copy.read()], "00000000000a", copy.started)
    after = snapshot(copy.root)
    shutil.rmtree(base)
    return before, after


def test_killed_while_going_back_with_no_rollback_line_is_not_finished_forward() -> None:
    problems: list[str] = []
    with small_disk() as disk:
        before, after = reference(disk)
        for kill_back in (1, 3):
            base = disk / f"k{kill_back}"
            said, _labels = attempt(disk, base, 6, kill_back)
            where = f"disk full at step 6 and at rollback, killed at back step {kill_back} ({said[:100]})"
            next_start(disk, base)
            problems += check(base, before, after, where)
            shutil.rmtree(base, ignore_errors=True)
    assert not problems, "\n".join(problems)


def test_record_unwritable_after_going_back_with_no_rollback_line() -> None:
    """No kill: the disk stays full to the end of the run (its record cannot be written either); the server says
    the journal is kept; the next start must not finish forward what was put back."""
    with small_disk() as disk:
        before, after = reference(disk, MIXED)
        base = disk / "nokill"
        said, _labels = attempt(disk, base, 14, None, MIXED)  # step 14: the second deletion
        journal_left = any((base / "history" / ".journal").glob("apply-*.json"))
        next_start(disk, base)
        problems = check(base, before, after, f"disk full at step 14 and at rollback ({said[:200]}; journal left: "
                                               f"{journal_left})")  # fmt: skip
    assert not problems, "\n".join(problems)


def test_undo_killed_while_going_back_with_no_rollback_line() -> None:
    """The same for an undo: the disk fills at one of its steps and again at "rollback"; killed going back. After
    the next start the call must be whole (as it left the tree) or whole undone."""
    problems: list[str] = []
    with small_disk() as disk:
        before, after = reference(disk, MIXED)
        for kill_back in (1, 2):
            base = disk / f"u{kill_back}"
            copy = Copy(base)
            populate(copy.root)
            copy.run(MIXED)
            store = HistoryStore(base / "history", 1 << 30)
            Applier(store).apply([copy.read()], "00000000000a", copy.started)
            store.close()
            labels: list[str] = []
            backs = 0

            def point(label: str, labels: list[str] = labels, kill_back: int = kill_back) -> None:
                nonlocal backs
                labels.append(label)
                if label.startswith("step 5 ") or label == "rollback":
                    fill(disk)
                if label.startswith("back ") and len(label.split()) > 2:
                    if backs == kill_back:
                        raise Killed
                    backs += 1

            old = faults.point
            faults.point = point
            said = "undone"
            try:
                Applier(HistoryStore(base / "history", 1 << 30)).undo("00000000000a", new_audit_id(), [str(copy.root)])
            except NotApplied as exc:
                said = f"not undone: {exc.why}"
            except Killed:
                said = "killed"
            finally:
                faults.point = old
            next_start(disk, base)
            now = snapshot(copy.root)
            if differences(before, now) and differences(after, now):
                problems.append(
                    f"undo: disk full at its step 5 and at rollback, killed at back step {kill_back} "
                    f"({said[:80]}): neither the call nor its undo: vs call {differences(after, now)[:3]}, "
                    f"vs before it {differences(before, now)[:3]}"
                )
    assert not problems, "\n".join(problems)
