"""Red team 59 N2: a socket deleted alone (``rm app.sock``) into a history on another file system whose path is
long (a long HOME): ``kept._socket_node`` binds the full path of the history's temp name plus ``.s`` (sun_path
takes 107 bytes), fails with ENAMETOOLONG, and the deletion is a conflict — natively it is one rename."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from mcp_server_guard.audit import new_audit_id
from mcp_server_guard.changes.apply import Applier, now_ns
from mcp_server_guard.changes.changeset import Change, ChangeSet
from mcp_server_guard.files.history import HistoryStore
from support.elsewhere import history_elsewhere


@pytest.mark.parametrize("elsewhere", [False, True], ids=["same-fs", "history-elsewhere"])
def test_a_socket_deleted_alone_with_a_long_history_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        elsewhere: bool) -> None:  # fmt: skip
    base = tmp_path / ("s" * 20)
    base.mkdir()
    if elsewhere:
        history_elsewhere(monkeypatch, base)
    root, upper = base / "root", base / "upper"
    root.mkdir()
    upper.mkdir()
    monkeypatch.chdir(root)
    with socket.socket(socket.AF_UNIX) as node:
        node.bind("app.sock")
    history = base / ("h" * 60) / "history"
    assert len(str(history)) > 75
    started = now_ns() + 1
    os.mknod(upper / "app.sock", 0o600 | 0o020000, os.makedev(0, 0))  # overlayfs whiteout: deleted
    change = Change("app.sock", "delete", "socket")
    outcome = Applier(HistoryStore(history, 1 << 30)).apply(
        [ChangeSet(str(root), str(upper), (change,))], new_audit_id(), started)  # fmt: skip
    assert not outcome.conflicts, outcome.conflicts
    assert not os.path.lexists(root / "app.sock")
