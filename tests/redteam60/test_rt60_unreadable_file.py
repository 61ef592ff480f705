"""Red team 60 F2: a file its owner may not read (mode 000: a key locked down; 0200: a drop box) deleted by a
command, and the undo of a call that made one. The step's lock opened the file to read it (EACCES: "not deleted: it
changed (Permission denied)", a false conflict, and the undo refused whole); with the history on another file
system the pre-image is copied, which reads it too. Now the lock holds such a file by an O_PATH descriptor
(``nofollow._locked``) and a copy gives it u+r for the time of its open (``copying.open_to_read``). The server runs as
a user: as root these tests run again without CAP_DAC_OVERRIDE (``support.as_a_user``). The command lines are data
(rt60.json)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mcp_server_guard.audit import new_audit_id
from mcp_server_guard.changes.apply import Applier
from mcp_server_guard.files.history import HistoryStore
from support.as_a_user import again_as_a_user, as_a_user
from support.copies import Copy, overlays_work
from support.elsewhere import history_elsewhere

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
SCRIPTS = json.loads((Path(__file__).parent / "rt60.json").read_text())


def test_files_their_owner_may_not_read_as_a_user(tmp_path: Path) -> None:
    again_as_a_user(__file__, tmp_path)


@as_a_user
@pytest.mark.parametrize(("name", "mode", "script"), [("secret.key", 0o000, "delete-unreadable-file"),
                                                      ("drop.box", 0o200, "delete-write-only-file")])  # fmt: skip
@pytest.mark.parametrize("linked", [False, True], ids=["one-name", "two-names"])
@pytest.mark.parametrize("elsewhere", [False, True], ids=["native", "history-elsewhere"])
def test_deleting_a_file_its_owner_cannot_read_applies_and_undoes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, elsewhere: bool, linked: bool, name: str, mode: int, script: str
) -> None:
    if elsewhere:
        history_elsewhere(monkeypatch, tmp_path)
    copy = Copy(tmp_path / "c")
    (copy.root / name).write_text("s3cr3t\n")
    (copy.root / name).chmod(mode)
    if linked:
        (copy.root / "other.key").hardlink_to(copy.root / name)  # (a file with two names is kept by copy)
    changes = copy.run(SCRIPTS[script])
    store = HistoryStore(tmp_path / "history", 1 << 30)
    call = new_audit_id()
    outcome = Applier(store).apply([changes], call, copy.started)
    assert not outcome.conflicts, outcome.conflicts
    assert not os.path.lexists(copy.root / name)
    assert not linked or os.lstat(copy.root / "other.key").st_mode & 0o7777 == mode
    Applier(store).undo(call, new_audit_id(), [str(copy.root)])
    back = os.lstat(copy.root / name)
    assert back.st_mode & 0o7777 == mode
    if linked:
        assert (back.st_ino, back.st_nlink) == (os.lstat(copy.root / "other.key").st_ino, 2)
    (copy.root / name).chmod(0o600)
    assert (copy.root / name).read_text() == "s3cr3t\n"


@as_a_user
@pytest.mark.parametrize("elsewhere", [False, True], ids=["native", "history-elsewhere"])
def test_the_undo_of_a_call_that_made_an_unreadable_file_removes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, elsewhere: bool
) -> None:
    if elsewhere:
        history_elsewhere(monkeypatch, tmp_path)
    copy = Copy(tmp_path / "c")
    (copy.root / "keep.txt").write_text("k\n")
    changes = copy.run(SCRIPTS["make-unreadable-file"])
    store = HistoryStore(tmp_path / "history", 1 << 30)
    call = new_audit_id()
    outcome = Applier(store).apply([changes], call, copy.started)
    assert not outcome.conflicts, outcome.conflicts
    assert os.lstat(copy.root / "made.key").st_mode & 0o7777 == 0
    Applier(store).undo(call, new_audit_id(), [str(copy.root)])
    assert sorted(os.listdir(copy.root)) == ["keep.txt"], os.listdir(copy.root)


@as_a_user
@pytest.mark.parametrize("elsewhere", [False, True], ids=["native", "history-elsewhere"])
def test_deleting_a_tree_holding_a_file_its_owner_cannot_read_applies_and_undoes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, elsewhere: bool
) -> None:
    if elsewhere:
        history_elsewhere(monkeypatch, tmp_path)
    copy = Copy(tmp_path / "c")
    (copy.root / "tree").mkdir()
    (copy.root / "tree" / "secret.key").write_text("s3cr3t\n")
    (copy.root / "tree" / "secret.key").chmod(0)
    changes = copy.run(SCRIPTS["delete-tree"])
    store = HistoryStore(tmp_path / "history", 1 << 30)
    call = new_audit_id()
    outcome = Applier(store).apply([changes], call, copy.started)
    assert not outcome.conflicts, outcome.conflicts
    assert not os.path.lexists(copy.root / "tree")
    Applier(store).undo(call, new_audit_id(), [str(copy.root)])
    assert os.lstat(copy.root / "tree" / "secret.key").st_mode & 0o7777 == 0
