"""Red team 60 F1: a deleted tree kept in a history on another file system is renamed aside
(``.mcp-guard-<entry>.keep``), copied, then removed (``kept._keep_aside`` / ``finish_aside``). The rename stops a
program that writes *by name*, but not one that reaches the tree through a descriptor it holds: a shell or a dev
server whose working directory is in the tree, a logger with its file open. What such a program writes while the
copy runs (seconds for a big tree) into a part already copied is in no copy, and ``remove_entry`` then deletes it:
gone, no conflict said. With the history on the project's file system the tree is renamed into the history whole,
so the same write lands in the pre-image and the undo brings it back (the "native" case passes). Now the aside is
looked at again after the copy, entry by entry (``copying.as_copied``): a write made since makes the deletion a
conflict, the tree put back with it. The command's line is data (rt60.json)."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import pytest

from mcp_server_guard import faults
from mcp_server_guard.audit import new_audit_id
from mcp_server_guard.changes.apply import Applier
from mcp_server_guard.files.history import HistoryStore
from support.copies import Copy, overlays_work
from support.elsewhere import history_elsewhere

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
SCRIPTS = json.loads((Path(__file__).parent / "rt60.json").read_text())


def _everything(top: Path) -> bytes:
    """Every regular file's bytes below ``top`` (project and history), concatenated."""
    out = b""
    for directory, _dirs, files in os.walk(top):
        for name in files:
            p = os.path.join(directory, name)
            if not os.path.islink(p):
                with contextlib.suppress(OSError):
                    out += Path(p).read_bytes()
    return out


@pytest.mark.parametrize("how", ["new-file-by-cwd", "append-by-open-fd"])
@pytest.mark.parametrize("elsewhere", [False, True], ids=["native", "history-elsewhere"])
def test_a_write_into_a_tree_being_kept_by_a_descriptor_is_not_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, elsewhere: bool, how: str
) -> None:
    if elsewhere:
        history_elsewhere(monkeypatch, tmp_path)
    copy = Copy(tmp_path / "c")
    sub = copy.root / "tree" / "logs"
    sub.mkdir(parents=True)
    (sub / "app.log").write_text("line 1\n")
    (copy.root / "tree" / "a.txt").write_text("a\n")
    changes = copy.run(SCRIPTS["delete-tree"])

    # Another program: its working directory is tree/logs (a terminal, a dev server), its log file open for append.
    cwd = os.open(sub, os.O_RDONLY | os.O_DIRECTORY)
    log = os.open(sub / "app.log", os.O_WRONLY | os.O_APPEND)
    real = faults.point
    wrote: list[str] = []

    def point(label: str) -> None:
        real(label)
        # Native: right after the tree went into the history; elsewhere: while it is kept (after the copy).
        if not wrote and (label.startswith("history copied") or (not elsewhere and label.startswith("done"))):
            wrote.append(label)
            if how == "new-file-by-cwd":
                fd = os.open("late.log", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=cwd)
                os.write(fd, b"THEIR-WRITE-FROM-CWD\n")
                os.close(fd)
            else:
                os.write(log, b"THEIR-APPENDED-LINE\n")

    monkeypatch.setattr(faults, "_trace", "/dev/null")  # points are passed only when traced
    monkeypatch.setattr(faults, "point", point)
    store = HistoryStore(tmp_path / "history", 1 << 30)
    call = new_audit_id()
    try:
        outcome = Applier(store).apply([changes], call, copy.started)
    finally:
        os.close(cwd)
        os.close(log)
    assert wrote, "the write was never made"
    marker = b"THEIR-WRITE-FROM-CWD" if how == "new-file-by-cwd" else b"THEIR-APPENDED-LINE"
    said = [c.what for c in outcome.conflicts]
    kept = marker in _everything(tmp_path / "history") or marker in _everything(copy.root)
    assert kept or said, "their write is in neither the project nor the history, and no conflict was said"
    assert not elsewhere or said, "a write into the tree while it was copied is a conflict"
    # And an undo brings it back with the tree (as natively).
    Applier(store).undo(call, new_audit_id(), [str(copy.root)])
    assert marker in _everything(copy.root / "tree"), "the undo put the tree back without their write"
