"""Red team 77: a run stopped by a full disk while going back (killed at a step of going back), then its recovery
killed too (the disk still full), at every step of the recovery's going back and at its record/close; then a next
start with room. After it the tree must be all old, or all new with an exact undo.

The shape's lines are plain file operations on a temporary copy (data, never harmful)."""

from __future__ import annotations

import os
import shutil
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
from support.small_disk import fill, small_disk

pytestmark = pytest.mark.skipif(not overlays_work() or os.getuid() != 0, reason="needs root and overlays")

OLD_NS = 1_000_000_000 * 10**9
MIXED = (
    "mkdir d; for i in $(seq 8); do echo new$i > new$i.txt; echo n$i > d/n$i; done; echo x >> old0.txt; "
    "rm old1*.txt old2.txt old3.txt old4.txt"
)
AUDIT = "00000000000a"


class Killed(BaseException):
    """The server dies here."""


def populate(root: Path) -> None:
    for i in range(12):
        (root / f"old{i}.txt").write_text(f"old {i}\n" * 50)
    for directory, dirs, files in os.walk(root, topdown=False):
        for name in files + dirs:
            os.utime(os.path.join(directory, name), ns=(OLD_NS, OLD_NS), follow_symlinks=False)
    os.utime(root, ns=(OLD_NS, OLD_NS))


def reference(disk: Path) -> tuple[Tree, Tree]:
    base = disk / "ref"
    copy = Copy(base)
    populate(copy.root)
    before = snapshot(copy.root)
    copy.run(MIXED)
    Applier(HistoryStore(base / "history", 1 << 30)).apply([copy.read()], AUDIT, copy.started)
    after = snapshot(copy.root)
    shutil.rmtree(base)
    return before, after


def with_points(point: Callable[[str], None], call: Callable[[], object]) -> object:
    old = faults.point
    faults.point = point  # type: ignore[assignment]
    try:
        return call()
    except NotApplied as exc:
        return f"not applied: {exc.why}"
    except Killed:
        return "killed"
    except (OSError, HistoryError) as exc:
        return f"raised {type(exc).__name__}: {exc}"
    finally:
        faults.point = old


def first_run(disk: Path, base: Path, fail_step: int, kill_back: int) -> str:
    copy = Copy(base)
    populate(copy.root)
    copy.run(MIXED)
    backs = 0

    def point(label: str) -> None:
        nonlocal backs
        if label.startswith(f"step {fail_step} "):
            fill(disk)
        if label.startswith("back ") and len(label.split()) > 2:
            if backs == kill_back:
                raise Killed
            backs += 1

    store = HistoryStore(base / "history", 1 << 30)
    return str(with_points(point, lambda: store and Applier(store).apply([copy.read()], AUDIT, copy.started)))


def start(disk: Path, base: Path, kill: str | None, full: bool) -> str:
    """A next start; ``kill``: "back N" (the N-th step of going back), "record", "close" or None."""
    (disk / "hog").unlink(missing_ok=True)
    if full:
        fill(disk)
    backs = 0

    def point(label: str) -> None:
        nonlocal backs
        if kill is None:
            return
        if label.startswith("back ") and len(label.split()) > 2:
            if kill == f"back {backs}":
                raise Killed
            backs += 1
        elif label == kill:
            raise Killed

    store = HistoryStore(base / "history", 1 << 30)
    try:
        return str(with_points(point, lambda: recover(store, [str(base / "root")], [str(base / "upper")])))
    finally:
        store.close()


def check(base: Path, before: Tree, after: Tree, where: str) -> list[str]:
    now = snapshot(base / "root")
    left = sorted(p.name for p in (base / "history" / ".journal").glob("apply-*.json"))
    if left:
        return [f"{where}: journal still there after a start with room: {left}"]
    if not differences(before, now):
        return []
    if differences(after, now):
        return [f"{where}: neither all old nor all new: vs old {differences(before, now)[:4]}; "
                f"vs new {differences(after, now)[:4]}"]  # fmt: skip
    store = HistoryStore(base / "history", 1 << 30)
    try:
        Applier(store).undo(AUDIT, new_audit_id(), [str(base / "root")])
    except Exception as exc:
        return [f"{where}: all new, but its undo fails: {type(exc).__name__}: {exc}"]
    finally:
        store.close()
    if d := differences(before, snapshot(base / "root")):
        return [f"{where}: all new, undo not exact: {d[:4]}"]
    return []


@pytest.mark.parametrize("fail_step", [8, 15])
def test_recovery_killed_on_a_full_disk_twice(fail_step: int) -> None:
    problems: list[str] = []
    with small_disk() as disk:
        before, after = reference(disk)
        n = 0
        for kill_back in (0, 2):
            for kills in (["back 0"], ["back 1"], ["back 3"], ["record"], ["close"], ["back 1", "back 0"],
                          ["record", "record"]):  # fmt: skip
                n += 1
                base = disk / f"w{n}"
                said = [first_run(disk, base, fail_step, kill_back)]
                for kill in kills:
                    said.append(start(disk, base, kill, full=True))
                said.append(start(disk, base, None, full=False))
                (disk / "hog").unlink(missing_ok=True)
                where = f"disk full at step {fail_step}, killed at back {kill_back}, starts killed at {kills} ({said})"
                problems += check(base, before, after, where)
                shutil.rmtree(base, ignore_errors=True)
    assert not problems, "\n".join(problems)
