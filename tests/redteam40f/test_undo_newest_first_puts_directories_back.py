"""Issue 40, red team f, item 4: "Rolling back several calls means undoing them newest first" (docs/agent-cli.md).
After ``mkdir n`` (call A) and ``mv n m`` or ``chmod 700 n`` (call B), undoing B was exact, but undoing A was then
refused (UndoConflict): B's undo put the directory back by a rename, which changed its ctime, and A's undo took
that for a later change. Files were fine. Now a directory that later calls changed and their undos put back is
judged from the last of those undos — and only then: a later call still in force, a redo, or a change after the
undo still stops A's undo."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support import RawClient
from support.fidelity import snapshot
from support.redteam import SX, audit_id_of, call, mcp_guard, started

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")


def _sh(raw: RawClient, id_: int, command: str) -> str:
    result = call(raw, id_, "shell_exec", {"command": command})
    assert result["structuredContent"]["transaction"] == "applied", result
    return str(audit_id_of(result))


def _undo(state: Path, audit_id: str) -> tuple[int, str]:
    done = mcp_guard(
        "undo", audit_id, "--history-dir", str(state / "history"), "--audit-log", str(state / "audit.jsonl")
    )
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("mkdir n && echo x > n/f", "mv n m"),
        ("mkdir n && echo x > n/f", "chmod 700 n"),
        ("mv d d2", "mv d2 d3"),
    ],
)
def test_two_calls_undone_newest_first_give_back_the_tree_before_both(
    workspace: Path, tmp_path: Path, first: str, second: str
) -> None:
    (workspace / "a.txt").write_text("a\n", encoding="utf-8")
    (workspace / "d").mkdir()
    (workspace / "d" / "f.txt").write_text("f\n", encoding="utf-8")
    state = tmp_path / "state"
    before = snapshot(workspace)
    raw = started(SX, workspace, state)
    try:
        a = _sh(raw, 1, first)
        middle = snapshot(workspace)
        b = _sh(raw, 2, second)
    finally:
        raw.close()
    assert _undo(state, b)[0] == 0
    assert snapshot(workspace) == middle
    code, said = _undo(state, a)
    assert code == 0, said
    assert snapshot(workspace) == before


@pytest.mark.parametrize("later", ["a call still in force", "a redo", "a change after the undo"])
def test_a_directory_not_as_the_call_left_it_still_stops_its_undo(workspace: Path, tmp_path: Path, later: str) -> None:
    state = tmp_path / "state"
    raw = started(SX, workspace, state)
    try:
        a = _sh(raw, 1, "mkdir n && echo x > n/f")
        b = _sh(raw, 2, "mv n m")
        assert _undo(state, b)[0] == 0
        if later == "a call still in force":
            _sh(raw, 3, "echo more > n/g")
        elif later == "a redo":
            undo_id = _undo_id(state, b)
            assert _undo(state, undo_id)[0] == 0  # the undo undone: b in force again (m, no n)
            _sh(raw, 4, "mkdir n && echo y > n/f")  # a new n, made by a later call
    finally:
        raw.close()
    if later == "a change after the undo":
        (workspace / "n" / "g").write_text("someone else's\n", encoding="utf-8")
    code, said = _undo(state, a)
    assert code != 0 and "changed" in said.lower(), said


def _undo_id(state: Path, undone: str) -> str:
    """The audit id of the undo of call ``undone`` (from the history's call records)."""
    import json

    for record in sorted((state / "history" / "calls").glob("*.json")):
        data = json.loads(record.read_text(encoding="utf-8"))
        if data.get("undoes") == undone:
            return str(data["audit_id"])
    raise AssertionError(f"no undo of {undone}")
