"""A write made while a step copies a file into the history, by a program that takes no lock (a terminal's ``>>``,
a logger), is never lost without a word.

A pre-image is copied (not linked or moved) where the file has other names or the history lies on another file
system; the copy of a large file takes seconds. The step looked at the file (its lock held) before the copy, so a
write made during the copy was not seen: the step then replaced or removed the file, and the write was gone, with
no conflict said. (Found while chasing a rare failure of tests/changes/test_write_during_keep_rt11.py, whose
outside writer had in fact stopped without writing; the loss here is real all the same.)

Library level: the write is made by a stand-in for the other program at the one moment it matters (the fault point
just after the copy, before the step goes on).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from mcp_server_guard import faults
from mcp_server_guard.audit import new_audit_id
from mcp_server_guard.changes import Applier
from mcp_server_guard.changes.apply import now_ns
from mcp_server_guard.changes.changeset import Change, ChangeSet
from mcp_server_guard.changes.plan import Outcome
from mcp_server_guard.files.history import HistoryStore
from mcp_server_guard.files.kept import aside_name, keep_data
from support.elsewhere import history_elsewhere


def _apply(tmp_path: Path, change: Change, during_copy: Callable[[], None], monkeypatch: pytest.MonkeyPatch,
           *, other_fs: bool) -> Outcome:  # fmt: skip
    history = tmp_path / "history"
    upper = tmp_path / "upper"
    real_point = faults.point
    fired: list[str] = []

    def point(label: str) -> None:
        if label.startswith("history copied") and not fired:
            fired.append(label)
            during_copy()
        real_point(label)

    monkeypatch.setattr(faults, "point", point)
    if other_fs:
        history_elsewhere(monkeypatch, tmp_path)
    started = now_ns() + 1
    store = HistoryStore(history, 1 << 30)
    outcome = Applier(store).apply([ChangeSet(str(tmp_path / "root"), str(upper), (change,))], new_audit_id(), started)
    assert fired, "the step never copied a pre-image"
    return outcome


def _project(tmp_path: Path, *, names: int) -> Path:
    root, upper = tmp_path / "root", tmp_path / "upper"
    root.mkdir()
    upper.mkdir()
    (root / "a").write_bytes(b"x" * 300_000 + b"old\n")
    for n in range(1, names):
        os.link(root / "a", root / f"a{n}")
    return root


def _append(path: Path) -> Callable[[], None]:
    def write() -> None:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, b"P\n")
        finally:
            os.close(fd)

    return write


def _settled(root: Path) -> None:
    """Wait (bounded) until the coarse clock that stamps ctimes is past every ctime in ``root``: the project was
    made just now, not while a copy ran."""
    newest = max(os.lstat(p).st_ctime_ns for p in [root, *root.rglob("*")])
    deadline = time.monotonic() + 5
    while time.clock_gettime_ns(5) <= newest:  # CLOCK_REALTIME_COARSE
        assert time.monotonic() < deadline, "the coarse clock did not move"
        time.sleep(0.001)


def _said(outcome: Outcome, path: Path) -> bool:
    return any(c.path == str(path) for c in outcome.conflicts)


@pytest.mark.parametrize("other_fs", [False, True], ids=["several-names", "history-on-another-fs"])
def test_attack_a_write_during_a_pre_image_copy_is_not_lost_when_the_command_rewrote_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, other_fs: bool
) -> None:
    root = _project(tmp_path, names=1 if other_fs else 2)
    (tmp_path / "upper" / "a").write_bytes(b"x" * 300_000 + b"old\ny\n")
    os.chmod(tmp_path / "upper" / "a", 0o644)
    os.chmod(root / "a", 0o644)
    size = (root / "a").stat().st_size

    def write_then_other_name_goes() -> None:
        _append(root / "a")()
        if not other_fs:
            os.unlink(root / "a1")  # the other name goes too (another call's ``rm``): only ``a`` holds the write

    change = Change("a", "modify", "file", size=size + 2, old_size=size, mode=0o644, old_mode=0o644)
    outcome = _apply(tmp_path, change, write_then_other_name_goes, monkeypatch, other_fs=other_fs)
    assert (root / "a").read_bytes().endswith(b"P\n"), (outcome, (root / "a").read_bytes()[-12:])
    assert _said(outcome, root / "a"), outcome


def test_attack_a_write_during_a_pre_image_copy_is_not_lost_when_the_command_deleted_a_name_of_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path, names=2)
    size = (root / "a").stat().st_size

    def write_then_other_name_goes() -> None:
        _append(root / "a")()
        os.unlink(root / "a1")

    change = Change("a", "delete", "file", size=size, mode=0o644)
    outcome = _apply(tmp_path, change, write_then_other_name_goes, monkeypatch, other_fs=False)
    assert (root / "a").exists() and (root / "a").read_bytes().endswith(b"P\n"), outcome
    assert _said(outcome, root / "a"), outcome


@pytest.mark.parametrize("what", ["file", "tree"])
def test_attack_a_write_by_name_while_a_deletion_is_copied_to_another_fs_finds_nothing_to_lose(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    """A file or tree deleted into a history on another file system is renamed aside first (one rename), then
    copied and removed: a write by its name during the copy finds no file, as after the deletion natively, and
    what was there is whole in the history (red team 56 F1, F2: a write into a tree copied first and removed after
    went with it)."""
    root = _project(tmp_path, names=1)
    (root / "d" / "e").mkdir(parents=True)
    (root / "d" / "e" / "f").write_text("f\n")
    target = root / ("a" if what == "file" else "d/e/f")
    met: list[str] = []

    def make_late() -> None:
        (target.parent / "late").write_text("late\n")

    def write() -> None:
        attempts: list[Callable[[], None]] = [_append(target), *([make_late] if what == "tree" else [])]
        for attempt in attempts:
            try:
                attempt()
            except FileNotFoundError:
                met.append("gone")

    path = "a" if what == "file" else "d"
    change = Change(
        path, "delete", "file" if what == "file" else "dir", size=0, mode=0o644 if what == "file" else 0o755
    )
    outcome = _apply(tmp_path, change, write, monkeypatch, other_fs=True)
    assert met == ["gone"] * (2 if what == "tree" else 1), met
    assert not (root / path).exists() and not outcome.conflicts, outcome
    kept = [p for p in (tmp_path / "history").iterdir() if p.suffix in (".data", ".tree")]
    assert len(kept) == 1, kept
    held = kept[0] if what == "file" else kept[0] / "e" / "f"
    assert held.read_bytes() == (b"x" * 300_000 + b"old\n" if what == "file" else b"f\n")
    assert not [p.name for p in root.iterdir() if ".keep" in p.name]  # the aside name is gone too


def test_a_pre_image_copied_while_nobody_writes_lands_without_a_conflict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path, names=1)
    (tmp_path / "upper" / "a").write_bytes(b"new\n")
    os.chmod(tmp_path / "upper" / "a", 0o644)
    os.chmod(root / "a", 0o644)
    size = (root / "a").stat().st_size
    change = Change("a", "modify", "file", size=4, old_size=size, mode=0o644, old_mode=0o644)
    outcome = _apply(tmp_path, change, lambda: None, monkeypatch, other_fs=True)
    assert (root / "a").read_bytes() == b"new\n"
    assert not outcome.conflicts, outcome


def test_a_tree_copied_to_another_fs_while_nobody_writes_is_deleted_without_a_conflict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path, names=1)
    (root / "d" / "e").mkdir(parents=True)
    (root / "d" / "e" / "f").write_text("f\n")
    _settled(root)
    outcome = _apply(tmp_path, Change("d", "delete", "dir", mode=0o755), lambda: None, monkeypatch, other_fs=True)
    assert not (root / "d").exists()
    assert not outcome.conflicts, outcome


def test_attack_an_entry_already_at_the_aside_name_is_never_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The aside name is the step's own (its entry id); should anything be there already, the deletion fails and
    nothing is replaced or removed."""
    root = _project(tmp_path, names=1)
    history = tmp_path / "history"
    history.mkdir()
    history_elsewhere(monkeypatch, tmp_path)
    entry = "20261205T000000000000Z-abcdef"
    (root / aside_name(entry)).write_text("precious\n")
    dirfd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        st = os.stat("a", dir_fd=dirfd, follow_symlinks=False)
        with pytest.raises(FileExistsError):
            keep_data(dirfd, "a", st, history / f"{entry}.data", entry, move=True)
    finally:
        os.close(dirfd)
    assert (root / aside_name(entry)).read_text() == "precious\n"
    assert (root / "a").read_bytes().endswith(b"old\n")
    assert not (history / f"{entry}.data").exists()
