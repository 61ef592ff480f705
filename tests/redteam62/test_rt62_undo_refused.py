"""Red team 62 F5: undos refused though nothing changed since the call (the server running as a user). (a) ``chmod
000 d`` landed, and its undo said "not changed back: it changed (Permission denied)": the step opened the directory
to read it (now ``copying.open_to_read`` gives a directory of this user's u+rx for the open, as a file u+r). (b)
``echo new > drop.box`` (a 0200 drop box) landed; with the history on another file system its undo said "it was
written while its previous version was put back": the keep's own copy (u+r for its open) had moved the file's
ctime, and the check compared it with the file as the lock found it before the keep (now: as the keep left it).
As root these tests run again without CAP_DAC_OVERRIDE (``support.as_a_user``). Data: rt62_undo_refused.json."""

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
SCRIPTS = json.loads((Path(__file__).parent / "rt62_undo_refused.json").read_text())


def test_undos_of_unreadable_entries_as_a_user(tmp_path: Path) -> None:
    again_as_a_user(__file__, tmp_path)


def _round_trip(tmp_path: Path, copy: Copy, script: str) -> None:
    changes = copy.run(script)
    store = HistoryStore(tmp_path / "history", 1 << 30)
    call, undo = new_audit_id(), new_audit_id()
    outcome = Applier(store).apply([changes], call, copy.started)
    assert not outcome.conflicts, outcome.conflicts
    Applier(store).undo(call, undo, [str(copy.root)])  # (NotApplied before)
    Applier(store).undo(undo, new_audit_id(), [str(copy.root)])  # the redo


@as_a_user
@pytest.mark.parametrize("elsewhere", [False, True], ids=["native", "history-elsewhere"])
def test_the_undo_and_redo_of_chmod_000_of_a_directory_are_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, elsewhere: bool
) -> None:
    if elsewhere:
        history_elsewhere(monkeypatch, tmp_path)
    copy = Copy(tmp_path / "c")
    (copy.root / "d" / "sub").mkdir(parents=True)
    (copy.root / "d" / "f.txt").write_text("f\n")
    _round_trip(tmp_path, copy, SCRIPTS["chmod-000-dir"])
    assert os.lstat(copy.root / "d").st_mode & 0o7777 == 0
    (copy.root / "d").chmod(0o755)
    assert (copy.root / "d" / "f.txt").read_text() == "f\n"


@as_a_user
@pytest.mark.parametrize("elsewhere", [False, True], ids=["native", "history-elsewhere"])
def test_the_undo_and_redo_of_a_rewritten_drop_box_are_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, elsewhere: bool
) -> None:
    if elsewhere:
        history_elsewhere(monkeypatch, tmp_path)
    copy = Copy(tmp_path / "c")
    (copy.root / "drop.box").write_text("d\n")
    (copy.root / "drop.box").chmod(0o200)
    _round_trip(tmp_path, copy, SCRIPTS["rewrite-write-only-file"])
    assert os.lstat(copy.root / "drop.box").st_mode & 0o7777 == 0o200
    (copy.root / "drop.box").chmod(0o600)
    assert (copy.root / "drop.box").read_text() == "new\n"
