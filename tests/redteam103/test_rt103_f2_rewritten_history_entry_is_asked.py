"""Red team 103 F2 (MEDIUM): a sealed call record names its pre-images only by id, and the history's entries were
not sealed: whoever could write the store rewrote an entry's data and metadata together (they check only against
each other), kept the user's real sealed record, and `mcp-guard undo <id>` put the rewritten bytes into the user's
file with no question. Now every entry's metadata is sealed with the same key (``history_entries.entry_seal``), and
`mcp-guard undo` / `mcp-guard history restore` ask (UNDO_ASKS, --yes) for an entry that does not check, as they do
for a record that does not; `mcp-guard history` marks the call.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from support.redteam import FW, audit_id_of, call, mcp_guard, started

WORK = "the user's own draft\n"
FORGED = "bytes the record never named\n"


def _written(tmp_path: Path) -> tuple[Path, Path, str, str]:
    """A real file_write overwrote draft.md: (root, history, the call's audit id, the entry keeping the draft)."""
    root, state = tmp_path / "proj", tmp_path / "state"
    root.mkdir()
    (root / "draft.md").write_text(WORK)
    raw = started(FW, root, state, env={"MCP_GUARD_RUNTIME_DIR": str(tmp_path / "registry")})
    try:
        first = call(raw, 1, "file_write", {"path": "draft.md", "content": "x", "overwrite": True})
    finally:
        raw.close()
    assert not first.get("isError"), first
    audit_id = audit_id_of(first)
    history = state / "history"
    record = json.loads((history / "calls" / f"{audit_id}.json").read_text())
    befores = [c["before"] for c in record["changes"] if c.get("before")]
    assert len(befores) == 1, record
    return root, history, audit_id, befores[0]


def _rewrite(history: Path, entry_id: str, change: dict[str, Any] | None = None) -> None:
    """The attack: the entry's data and metadata rewritten to agree with each other (the record untouched)."""
    meta_path = history / f"{entry_id}.json"
    meta = json.loads(meta_path.read_text())
    data = FORGED.encode()
    kept = history / f"{entry_id}.data"
    kept.unlink()  # (kept whole, it is a name of the file the write replaced: the forger writes a file of its own)
    kept.write_bytes(data)
    meta.update(size=len(data), sha256=hashlib.sha256(data).hexdigest(), mtime_ns=kept.stat().st_mtime_ns)
    meta.update(change or {})
    meta_path.write_text(json.dumps(meta))


def _cli(history: Path, *args: str) -> list[str]:
    return [*args, "--history-dir", str(history), "--audit-log", str(history.parent / "audit.jsonl")]


def test_undo_of_a_sealed_record_whose_entry_was_rewritten_asks_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, history, audit_id, entry_id = _written(tmp_path)
    _rewrite(history, entry_id)
    monkeypatch.setenv("MCP_GUARD_RUNTIME_DIR", str(tmp_path / "registry"))  # (the servers' key: the record checks)
    undone = mcp_guard(*_cli(history, "undo", audit_id))  # (no --yes)
    assert undone.returncode == 2, (undone.stdout, undone.stderr)
    assert "UNDO_ASKS" in undone.stderr and entry_id in undone.stderr, undone.stderr
    assert (root / "draft.md").read_text() == "x", "nothing is put back before the person says yes"
    listed = mcp_guard("history", "--history-dir", str(history))
    assert "not sealed by your servers' key" in listed.stdout, listed.stdout
    # The person who says yes gets what the store holds (it may be the only copy there is).
    forced = mcp_guard(*_cli(history, "undo", audit_id, "--yes"))
    assert forced.returncode == 0, (forced.stdout, forced.stderr)
    assert (root / "draft.md").read_text() == FORGED


def test_an_entry_with_its_seal_stripped_is_asked_like_one_never_sealed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, history, audit_id, entry_id = _written(tmp_path)
    _rewrite(history, entry_id, {"seal": ""})
    monkeypatch.setenv("MCP_GUARD_RUNTIME_DIR", str(tmp_path / "registry"))
    undone = mcp_guard(*_cli(history, "undo", audit_id))
    assert "UNDO_ASKS" in undone.stderr, undone.stderr
    assert (root / "draft.md").read_text() == "x"


def test_history_restore_of_a_rewritten_entry_asks_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, history, _audit_id, entry_id = _written(tmp_path)
    _rewrite(history, entry_id, {"path": str(root / "elsewhere.md")})
    monkeypatch.setenv("MCP_GUARD_RUNTIME_DIR", str(tmp_path / "registry"))
    restored = mcp_guard(*_cli(history, "history", "restore", entry_id))
    assert restored.returncode == 2 and "UNDO_ASKS" in restored.stderr, (restored.stdout, restored.stderr)
    assert not (root / "elsewhere.md").exists()


def test_undo_and_restore_of_untouched_entries_ask_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, history, audit_id, entry_id = _written(tmp_path)
    monkeypatch.setenv("MCP_GUARD_RUNTIME_DIR", str(tmp_path / "registry"))
    listed = mcp_guard("history", "--history-dir", str(history))
    assert listed.returncode == 0 and audit_id in listed.stdout and "not sealed" not in listed.stdout, listed
    restored = mcp_guard(*_cli(history, "history", "restore", entry_id))
    assert restored.returncode == 0, (restored.stdout, restored.stderr)
    assert (root / "draft.md").read_text() == WORK
    undone = mcp_guard(*_cli(history, "undo", audit_id, "--force"))
    assert "UNDO_ASKS" not in undone.stderr, undone.stderr
