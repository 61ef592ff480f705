"""Red team 57: a deletion into a history on another file system, killed right after its file or tree was renamed
aside (``.mcp-guard-<entryId>.keep``); before the next start someone makes a new file at the deleted name (an
editor's save, a logger). Plain file operations on temporary directories (data, never harmful)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from mcp_server_guard import faults
from mcp_server_guard.audit import new_audit_id
from mcp_server_guard.changes import Applier
from mcp_server_guard.changes.apply import NotApplied, now_ns
from mcp_server_guard.changes.changeset import Change, ChangeSet
from mcp_server_guard.changes.recovery import recover
from mcp_server_guard.files.history import HistoryError, HistoryStore
from support.elsewhere import history_elsewhere


def _killed_at_aside(tmp_path: Path, change: Change, monkeypatch: pytest.MonkeyPatch) -> str:
    """Apply ``change`` in a child killed just after the aside rename; the call's audit id."""
    history_elsewhere(monkeypatch, tmp_path)
    audit = new_audit_id()
    started = now_ns() + 1
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            real = faults.point

            def point(label: str) -> None:
                if label.startswith("history aside"):
                    os.kill(os.getpid(), signal.SIGKILL)
                real(label)

            faults.point = point
            store = HistoryStore(tmp_path / "history", 1 << 30)
            Applier(store).apply([ChangeSet(str(tmp_path / "root"), str(tmp_path / "upper"), (change,))], audit,
                                 started)  # fmt: skip
        finally:
            os._exit(3)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status), status
    return audit


@pytest.mark.parametrize("what", ["file", "tree"])
def test_attack_a_name_made_again_after_a_crash_at_the_aside_leaves_no_pre_image_in_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    root = tmp_path / "root"
    (root / "d").mkdir(parents=True)
    (tmp_path / "upper").mkdir()
    (root / "a").write_text("old a\n")
    (root / "d" / "f").write_text("old f\n")
    name = "a" if what == "file" else "d"
    change = Change(name, "delete", "file" if what == "file" else "dir", mode=0o644 if what == "file" else 0o755)
    audit = _killed_at_aside(tmp_path, change, monkeypatch)
    assert [p.name for p in root.iterdir() if p.name.endswith(".keep")], "no aside name left by the kill"
    (root / name).write_text("someone's new file\n")  # made before the next start
    store = HistoryStore(tmp_path / "history", 1 << 30)
    recover(store, [str(root)], [str(tmp_path / "upper")])
    store.sweep()
    problems: list[str] = []
    left = sorted(p.name for p in root.iterdir() if p.name.startswith(".mcp-guard-"))
    if left:
        problems.append(f"left in the project after the next start: {left}")
    if (root / name).read_text() != "someone's new file\n":
        problems.append("the new file was overwritten")
    try:
        Applier(store).undo(audit, new_audit_id(), [str(root)], force=True)
    except (HistoryError, NotApplied) as exc:
        problems.append(f"the call's undo fails: {exc}")
    assert not problems, "\n".join(problems)
