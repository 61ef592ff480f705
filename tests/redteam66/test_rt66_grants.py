"""Red team 66: the grant of owner bits to a project directory of mode 000 for a read, an apply or an undo.

Library level, run without CAP_DAC_OVERRIDE (``support.as_a_user``). Someone else's step (another call's read of
its change set, which takes no lock, or another program of the user's) is made at the one moment it matters, by a
stand-in hooked on the fault points.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from mcp_server_guard import faults
from mcp_server_guard.audit import new_audit_id
from mcp_server_guard.changes import Applier, name_changes
from mcp_server_guard.changes import changeset as changeset_module
from mcp_server_guard.changes.apply import now_ns
from mcp_server_guard.changes.changeset import Change, ChangeSet
from mcp_server_guard.files.history import HistoryStore
from mcp_server_guard.files.trees import own_dirs_as_found
from support.as_a_user import again_as_a_user, as_a_user

OLD_NS = 1_000_000_000 * 10**9


def test_grants_as_a_user(tmp_path: Path) -> None:
    again_as_a_user(__file__, tmp_path)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _project(tmp_path: Path) -> tuple[Path, Path, HistoryStore]:
    root, upper = tmp_path / "root", tmp_path / "upper"
    (root / "d").mkdir(parents=True)
    (root / "d" / "f").write_text("old\n")
    (upper / "d").mkdir(parents=True)
    (upper / "d" / "new").write_text("new\n")
    os.utime(root / "d" / "f", ns=(OLD_NS, OLD_NS))
    os.utime(root / "d", ns=(OLD_NS, OLD_NS))
    (root / "d").chmod(0)
    return root, upper, HistoryStore(tmp_path / "history", 1 << 30)


def _create_new(root: Path, upper: Path) -> list[ChangeSet]:
    return [ChangeSet(str(root), str(upper), (Change("d/new", "create", "file", size=4, mode=0o644),))]


def _hook(monkeypatch: pytest.MonkeyPatch, label: str, action: Callable[[], None]) -> None:
    """Run ``action`` once, in the thread that reaches the first fault point whose label starts with ``label``."""
    real = faults.point
    done: list[str] = []

    def point(name: str) -> None:
        if name.startswith(label) and not done:
            done.append(name)
            action()
        real(name)

    monkeypatch.setattr(faults, "point", point)


@as_a_user
def test_a_read_of_another_call_overlapping_an_apply_leaves_no_mode_widened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Call B's change set is read (``Transactions.read``: no tree lock, no applier lock; ``read_upper``'s scope lets
    d in with u+rx) while call A's apply writes into d (u+w given over what it found: 0500). B's read ends (d back to
    000), then A's step ends and puts back what it found: 0500. No crash, no note left: d stays 0500 for good."""
    root, upper, store = _project(tmp_path)
    applier = Applier(store)  # (a server makes its applier at its start, before any read)
    entered, leave, left = threading.Event(), threading.Event(), threading.Event()

    def other_read() -> None:  # call B's read_upper scope, as it opens a real directory it may not read
        rootfd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            with own_dirs_as_found(name_changes.note):
                fd = changeset_module.open_dir("d", rootfd)
                assert fd is not None
                os.close(fd)
                entered.set()
                leave.wait(10)
        finally:
            os.close(rootfd)
            left.set()

    reader = threading.Thread(target=other_read)
    reader.start()
    assert entered.wait(10)
    assert _mode(root / "d") == 0o500

    def end_the_read() -> None:
        leave.set()
        assert left.wait(10)

    _hook(monkeypatch, "widened", end_the_read)
    started = now_ns() - 10**9
    outcome = applier.apply(_create_new(root, upper), new_audit_id(), started)
    reader.join(10)
    mode = _mode(root / "d")
    # The mode is put back by the last of the two (``files.widened``: a shared note per inode). Left: the apply,
    # which entered d through the read's grant, may still find d closed again under it — a conflict, said.
    said = [c.path for c in outcome.conflicts]
    assert mode == 0 and [a.path for a in outcome.applied] + said == [str(root / "d" / "new")], (
        f"d was mode 000; after a read and an apply that overlapped: {mode:o}; {outcome}"
    )
    assert not list((store.directory / "widened").glob("*.json"))


@as_a_user
def test_a_chmod_by_someone_else_while_the_directory_is_let_in_is_not_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user opens d (``chmod 750 d``) while an apply writes into it (d let in with u+rwx for the apply's scope).
    At the scope's end the server puts back the mode it found (000) over theirs, unconditionally
    (``widened.narrow``), and ``name_changes.note`` takes the ctime that moved for the look: no conflict, the
    user's chmod silently undone."""
    root, upper, store = _project(tmp_path)
    _hook(monkeypatch, "widened", lambda: os.chmod(root / "d", 0o750))
    started = now_ns() - 10**9
    outcome = Applier(store).apply(_create_new(root, upper), new_audit_id(), started)
    assert _mode(root / "d") == 0o750 or outcome.conflicts, (
        f"the user's chmod 750 of d, made while the apply had it let in, became {_mode(root / 'd'):o} "
        f"with no conflict: {outcome}"
    )
