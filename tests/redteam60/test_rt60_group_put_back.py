"""Red team 60 F3: the owning group (and owner) of a pre-image put back across file systems. Natively a pre-image is
renamed (or linked) into the history and renamed back: the same inode, its uid and gid. With the history on another
file system it is copied in and copied back (``copying._copy`` / ``_copy_entry``: bytes, mode, times, user.* attributes
and ACLs — no ``fchown``), so the file the undo puts back belongs to the server's user and its group (or the
project directory's setgid group), not the group it had: a project shared through a group (``chgrp devs``; a user
may fchown to any group they belong to) loses it on every undo, and the undo says it put the tree back exactly.
Here as root: the files are of group 0, the server's effective group 4242; they came back as group 4242 (fixed:
``copying._owned_like``). The command lines are data (rt60.json)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mcp_server_guard.audit import new_audit_id
from mcp_server_guard.changes.apply import Applier
from mcp_server_guard.files.history import HistoryStore
from support.copies import Copy, overlays_work
from support.elsewhere import history_elsewhere

pytestmark = [
    pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here"),
    pytest.mark.skipif(os.geteuid() != 0, reason="sets a group this user may not be in"),
]
SCRIPTS = json.loads((Path(__file__).parent / "rt60.json").read_text())
GID = 4242


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run with another effective group")
@pytest.mark.parametrize("script", ["rewrite-file", "delete-file", "delete-tree"])
@pytest.mark.parametrize("elsewhere", [False, True], ids=["native", "history-elsewhere"])
def test_an_undo_puts_back_the_group_a_file_had(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, elsewhere: bool, script: str
) -> None:
    if elsewhere:
        history_elsewhere(monkeypatch, tmp_path)
    copy = Copy(tmp_path / "c")
    (copy.root / "g.txt").write_text("old\n")
    (copy.root / "tree").mkdir()
    (copy.root / "tree" / "t.txt").write_text("t\n")
    group = os.lstat(copy.root / "g.txt").st_gid  # the project's files' group (the sandbox maps only it)
    changes = copy.run(SCRIPTS[script])
    store = HistoryStore(tmp_path / "history", 1 << 30)
    call = new_audit_id()
    # The server runs with another effective group than the project's files have (a user whose primary group is
    # not the project's shared one): what it makes gets its group.
    own = os.getegid()
    os.setegid(GID)
    try:
        outcome = Applier(store).apply([changes], call, copy.started)
        assert not outcome.conflicts, outcome.conflicts
        Applier(store).undo(call, new_audit_id(), [str(copy.root)])
    finally:
        os.setegid(own)
    wrong = {
        p: os.lstat(copy.root / p).st_gid
        for p in ("g.txt", "tree", "tree/t.txt")
        if os.lstat(copy.root / p).st_gid != group
    }
    assert not wrong, f"the undo said success; these came back with another group: {wrong}"
