"""Red team 56 (fresh brief on 3fd8307: writes made while the server keeps a pre-image, and the followed names'
bounds). Each test_attack_* failed before its fix. The crash walk with the history on another file system (F4, F5)
is tests/changes/test_crash_walk_elsewhere.py; a write into a tree deleted across file systems (F1, F2) is
tests/changes/test_write_during_copy_keep.py.

* F3: an undo copying a pre-image back from a history on another file system (seconds for a big file) renamed it
  over a write made meanwhile: lost, no conflict said.
* F6: past 100,000 renames noted (one scratch file renamed back and forth counted each time) the rename helper
  noted nothing more and said nothing. Through the server the init still followed the names (their events, or the
  events lost: "unfollowed"), so nothing wrong landed (the red team's differential run, 31 s, is left out of the
  suite); the notes now count each file and place once, and a bound reached says "unfollowed".
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_server_guard import faults
from mcp_server_guard.audit import new_audit_id
from mcp_server_guard.changes import Applier
from mcp_server_guard.changes.apply import NotApplied, now_ns
from mcp_server_guard.changes.changeset import Change, ChangeSet
from mcp_server_guard.files.history import HistoryStore
from support.elsewhere import history_elsewhere


def test_attack_a_write_while_an_undo_copies_the_pre_image_back_from_another_fs_is_not_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, upper = tmp_path / "root", tmp_path / "upper"
    root.mkdir()
    upper.mkdir()
    (root / "a").write_bytes(b"x" * 300_000 + b"old\n")
    (upper / "a").write_bytes(b"new\n")
    os.chmod(root / "a", 0o644)
    os.chmod(upper / "a", 0o644)
    history_elsewhere(monkeypatch, tmp_path)
    store = HistoryStore(tmp_path / "history", 1 << 30)
    size = (root / "a").stat().st_size
    audit = new_audit_id()
    change = Change("a", "modify", "file", size=4, old_size=size, mode=0o644, old_mode=0o644)
    outcome = Applier(store).apply([ChangeSet(str(root), str(upper), (change,))], audit, now_ns() + 1)
    assert not outcome.conflicts and (root / "a").read_bytes() == b"new\n", outcome
    real_point = faults.point
    fired: list[str] = []

    def point(label: str) -> None:
        if label.startswith("take ") and not fired:  # the pre-image is about to be copied back
            fired.append(label)
            with open(root / "a", "ab") as out:  # a terminal's >>, no lock
                out.write(b"P\n")
        real_point(label)

    monkeypatch.setattr(faults, "point", point)
    # An undo says success only when the tree is back exactly: refused whole, the write kept.
    with pytest.raises(NotApplied, match="written while its previous version was put back"):
        Applier(store).undo(audit, new_audit_id(), [str(root)])
    assert fired
    assert (root / "a").read_bytes() == b"new\nP\n", (root / "a").read_bytes()[-8:]


def test_the_rename_notes_count_each_file_and_place_once(tmp_path: Path) -> None:
    """One file renamed back and forth is noted once each way, not once per rename (the bound is for files)."""
    from mcp_server_guard.shell.sandbox import renames

    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(1000):
            renames._note_renamed(fd, b"x0", 7)
            renames._note_renamed(fd, b"x1", 7)
        assert len(renames._renamed) == 2
    finally:
        os.close(fd)
        renames._renamed.clear()


def test_attack_past_the_bound_of_rename_notes_the_call_says_its_names_unfollowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_server_guard.shell.sandbox import renames

    monkeypatch.setattr(renames, "_MOVED_MAX", 3)
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for n in range(4):
            renames._note_renamed(fd, f"f{n}".encode(), 10 + n)
        said, origins, cut = renames.renamed(fd)
        assert cut and not said and not origins
        assert renames.renamed(fd)[2] is False  # (said once: the next call starts afresh)
    finally:
        os.close(fd)
        renames._renamed.clear()
