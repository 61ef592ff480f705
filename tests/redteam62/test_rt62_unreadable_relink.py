"""Red team 62 F2: a tree deleted by a command holds a file its owner may not read (0200 drop box, 000 key) that has
another name outside the tree (``other.key``). The undo puts the tree back, but the file comes back as a copy of
its own: the hard-link group is lost (natively, before the call, ``t/in/secret.key`` and ``other.key`` were one
file), though the undo says success; and the undo of that undo is then refused (UndoConflict on ``t``). The same
with mode 0444 or 0644 comes back linked. Responsible: ``revert._relink`` -> ``_same_file_as`` ->
``changeset.same_bytes`` opens both files O_RDONLY (EACCES for 0200/000: "not the same file", the copy stays),
where the rest of the writer now uses ``copying.open_to_read``. The server runs as a user (run as root, this
module runs again without CAP_DAC_OVERRIDE). The command is data (rt62_relink.json). Now the
comparison opens such files as their owner may (``same_bytes(as_owner=True)``)."""

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
SCRIPTS = json.loads((Path(__file__).parent / "rt62_relink.json").read_text())


def test_relinked_unreadable_as_a_user(tmp_path: Path) -> None:
    again_as_a_user(__file__, tmp_path)


@as_a_user
@pytest.mark.parametrize("mode", [0o200, 0o000, 0o444], ids=["0200", "000", "0444-control"])
@pytest.mark.parametrize("elsewhere", [False, True], ids=["native", "history-elsewhere"])
def test_undo_of_a_deleted_tree_keeps_the_unreadable_files_other_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, elsewhere: bool, mode: int
) -> None:
    if elsewhere:
        history_elsewhere(monkeypatch, tmp_path)
    copy = Copy(tmp_path / "c")
    (copy.root / "t" / "in").mkdir(parents=True)
    (copy.root / "t" / "in" / "secret.key").write_text("s3cr3t\n")
    os.link(copy.root / "t" / "in" / "secret.key", copy.root / "other.key")
    (copy.root / "other.key").chmod(mode)
    changes = copy.run(SCRIPTS["delete-tree"])
    store = HistoryStore(tmp_path / "history", 1 << 30)
    call = new_audit_id()
    outcome = Applier(store).apply([changes], call, copy.started)
    assert not outcome.conflicts, outcome.conflicts
    undo_id = new_audit_id()
    undone = Applier(store).undo(call, undo_id, [str(copy.root)])
    assert not undone.conflicts, undone.conflicts
    back, other = os.lstat(copy.root / "t" / "in" / "secret.key"), os.lstat(copy.root / "other.key")
    assert (back.st_ino, back.st_nlink) == (other.st_ino, 2), "the undo said success; the hard link is lost"
    redone = Applier(store).undo(undo_id, new_audit_id(), [str(copy.root)])  # the undo of the undo
    assert not redone.conflicts, redone.conflicts
    assert not os.path.lexists(copy.root / "t")
    assert os.lstat(copy.root / "other.key").st_mode & 0o7777 == mode
