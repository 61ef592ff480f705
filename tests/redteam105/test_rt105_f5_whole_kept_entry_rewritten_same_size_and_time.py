"""Red team 105 F5: a saved version kept whole (moved or hard-linked into the store: ``HistoryStore.keep``, sha256 "")
is checked only by its sealed size and ``mtime_ns`` (``history_entries.get``). Whoever can write the store while no
server runs rewrites its data with other bytes of the same size and sets the modification time back (``os.utime``:
the owner of a file sets it to anything); the sealed metadata is untouched, so ``HistoryStore.unsealed`` finds
nothing and `mcp-guard undo` puts the forged bytes into the user's file with no question.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from mcp_server_guard.paths import state_dir
from support.boxed import Person, run, shell
from support.redteam import mcp_guard

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

WORK = "the user's own draft\n"
FORGED = "planted by the store\n"  # (as many bytes as WORK)


async def _written(root: Path) -> tuple[Path, str, str]:
    """A real shell_exec call rewrote draft.md: (history, the call's audit id, the entry keeping the draft)."""
    (root / "draft.md").write_text(WORK)
    async with shell(root, Person(True)) as client:
        out = await run(client, "printf x > draft.md", cwd=str(root))
    assert out.get("transaction") == "applied", out
    audit_id = str(out.get("auditId") or out.get("audit_id") or "")
    history = state_dir() / "history"
    record = json.loads((history / "calls" / f"{audit_id}.json").read_text())
    befores = [c["before"] for c in record["changes"] if c.get("before")]
    assert len(befores) == 1, record
    return history, audit_id, befores[0]


async def test_undo_of_a_whole_kept_entry_rewritten_with_same_size_and_time_asks(workspace: Path) -> None:
    assert len(FORGED.encode()) == len(WORK.encode())
    root = workspace
    history, audit_id, entry_id = await _written(root)
    meta = json.loads((history / f"{entry_id}.json").read_text())
    assert meta["sha256"] == "" and meta["mtime_ns"], meta  # (kept whole: no SHA-256)
    data = history / f"{entry_id}.data"
    st = data.stat()
    data.write_bytes(FORGED.encode())  # the attack: same size, and the time set back
    os.utime(data, ns=(st.st_atime_ns, st.st_mtime_ns))
    undone = mcp_guard("undo", audit_id, "--history-dir", str(history), "--audit-log", str(history.parent / "a.jsonl"))
    assert (root / "draft.md").read_text() != FORGED, ("forged bytes put back unasked", undone.stdout, undone.stderr)


@pytest.mark.parametrize(
    ("line", "check"),
    [
        ("printf x > draft.md", "draft.md"),
        ("rm draft.md", "draft.md"),
        ("mv draft.md moved.md", "draft.md"),
        ("rm -r notes", "notes/a.md"),
    ],
)
async def test_undo_of_untouched_whole_kept_entries_asks_nothing(workspace: Path, line: str, check: str) -> None:
    root = workspace
    (root / "draft.md").write_text(WORK)
    (root / "notes").mkdir()
    (root / "notes" / "a.md").write_text("a\n")
    (root / "notes" / "deeper").mkdir()
    (root / "notes" / "deeper" / "b.md").write_text("b\n")
    before = (root / check).read_bytes()
    async with shell(root, Person(True)) as client:
        out = await run(client, line, cwd=str(root))
    assert out.get("transaction") == "applied", out
    audit_id = str(out.get("auditId") or out.get("audit_id") or "")
    history = state_dir() / "history"
    undone = mcp_guard("undo", audit_id, "--history-dir", str(history), "--audit-log", str(history.parent / "a.jsonl"))
    assert "UNDO_ASKS" not in undone.stderr, (line, undone.stderr)
    assert undone.returncode == 0, (line, undone.stdout, undone.stderr)
    assert (root / check).read_bytes() == before


async def test_undo_then_redo_then_undo_again_asks_nothing(workspace: Path) -> None:
    root = workspace
    history, first, _entry = await _written(root)
    log = str(history.parent / "a.jsonl")
    undone = mcp_guard("undo", first, "--history-dir", str(history), "--audit-log", log)
    assert undone.returncode == 0 and (root / "draft.md").read_text() == WORK, undone.stderr
    undo_id = undone.stdout.split("`mcp-guard undo ")[1].split("`")[0]
    redone = mcp_guard("undo", undo_id, "--history-dir", str(history), "--audit-log", log)
    assert redone.returncode == 0 and "UNDO_ASKS" not in redone.stderr, redone.stderr
    assert (root / "draft.md").read_text() == "x"
    redo_id = redone.stdout.split("`mcp-guard undo ")[1].split("`")[0]
    again = mcp_guard("undo", redo_id, "--history-dir", str(history), "--audit-log", log)
    assert again.returncode == 0 and "UNDO_ASKS" not in again.stderr, again.stderr
    assert (root / "draft.md").read_text() == WORK


async def test_history_restore_of_a_whole_kept_entry_rewritten_asks(workspace: Path) -> None:
    root = workspace
    history, _audit_id, entry_id = await _written(root)
    data = history / f"{entry_id}.data"
    st = data.stat()
    data.write_bytes(FORGED.encode())
    os.utime(data, ns=(st.st_atime_ns, st.st_mtime_ns))
    restored = mcp_guard("history", "restore", entry_id, "--history-dir", str(history),
                         "--audit-log", str(history.parent / "a.jsonl"))  # fmt: skip
    assert "UNDO_ASKS" in restored.stderr, (restored.stdout, restored.stderr)
    assert (root / "draft.md").read_text() == "x"


async def test_history_restore_of_an_untouched_whole_kept_entry_asks_nothing(workspace: Path) -> None:
    root = workspace
    history, _audit_id, entry_id = await _written(root)
    restored = mcp_guard("history", "restore", entry_id, "--history-dir", str(history),
                         "--audit-log", str(history.parent / "a.jsonl"))  # fmt: skip
    assert restored.returncode == 0 and "UNDO_ASKS" not in restored.stderr, (restored.stdout, restored.stderr)
    assert (root / "draft.md").read_text() == WORK
