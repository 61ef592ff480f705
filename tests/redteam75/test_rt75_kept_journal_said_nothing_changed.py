"""Red team 75: a run whose every step is done, and whose call record then cannot be written (the disk filled again
after the run gave its reserve back), raises NotApplied "its journal is kept" with nothing in ``left``. Both ways of
telling it then add "nothing was applied" (shell_exec's result, ``results.not_applied``) or "nothing was
changed" (``mcp-guard undo``), while the tree is all new (or all undone).

The shape's lines are plain file operations on a temporary copy (data, never harmful)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from mcp_server_guard import faults
from mcp_server_guard.changes.apply import Applier, NotApplied
from mcp_server_guard.changes.results import not_applied
from mcp_server_guard.files.history import HistoryStore
from support.copies import Copy, overlays_work
from support.fidelity import differences, snapshot
from support.small_disk import fill, small_disk

pytestmark = pytest.mark.skipif(not overlays_work() or os.getuid() != 0, reason="needs root and overlays")

OLD_NS = 1_000_000_000 * 10**9
AUDIT = "00000000000c"
SCRIPT = "echo after > edit.txt; rm gone.txt; echo new > new.txt"


def populate(root: Path) -> None:
    (root / "edit.txt").write_text("before\n")
    (root / "gone.txt").write_text("gone\n")
    for name in os.listdir(root):
        os.utime(root / name, ns=(OLD_NS, OLD_NS))
    os.utime(root, ns=(OLD_NS, OLD_NS))


def filled_at(disk: Path, at: str) -> Callable[[str], None]:
    def point(label: str) -> None:
        if label == at:
            fill(disk)

    return point


def test_shell_exec_result_says_nothing_applied_while_the_tree_is_all_new() -> None:
    with small_disk() as disk:
        copy = Copy(disk / "a")
        populate(copy.root)
        before = snapshot(copy.root)
        copy.run(SCRIPT)
        old = faults.point
        faults.point = filled_at(disk, "record")  # type: ignore[assignment]
        try:
            with pytest.raises(NotApplied) as caught:
                Applier(HistoryStore(disk / "a" / "history", 1 << 30)).apply([copy.read()], AUDIT, copy.started)
        finally:
            faults.point = old
        said = not_applied(caught.value)
        changed = differences(before, snapshot(copy.root))
    assert not ("nothing was applied" in said and changed), f"the result says {said!r}, yet the tree changed: {changed}"


def test_mcp_guard_undo_says_nothing_changed_while_the_tree_is_undone(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from mcp_server_guard.admin.app import app

    home = Path(tempfile.mkdtemp(prefix="rt75-home-"))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".state"))
    with small_disk() as disk:
        copy = Copy(disk / "u")
        populate(copy.root)
        before = snapshot(copy.root)
        copy.run(SCRIPT)
        history = disk / "u" / "history"
        store = HistoryStore(history, 1 << 30)
        Applier(store).apply([copy.read()], AUDIT, copy.started)
        store.close()
        old = faults.point
        faults.point = filled_at(disk, "record")  # type: ignore[assignment]
        try:
            result = CliRunner().invoke(
                app, ["undo", AUDIT, "--audit-log", str(home / "audit.jsonl"), "--history-dir", str(history)]
            )
        finally:
            faults.point = old
        out = result.output
        left = differences(before, snapshot(copy.root))
    assert not (result.exit_code != 0 and "nothing was changed" in out and not left), (
        f"exit {result.exit_code}, said {out!r}, yet the tree is undone (as before the call)"
    )
