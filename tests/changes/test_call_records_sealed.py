"""Call records are sealed with the user's key (issue 42 item 3: no server trusts a record it did not write): a
record changed, stripped of its seal, or sealed with another key is never played backwards by `mcp-guard undo` nor
listed by `mcp-guard history` — through the real console scripts."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import anyio
import pytest

from mcp_server_guard.files.calls import SEAL, CallRecords
from support import console_script, serve

FW = "mcp-server-file-write"


def _written(workspace: Path, tmp_path: Path) -> tuple[str, Path, Path]:
    """A file_write call that changed notes.txt ("first" -> "second"): its audit id, audit log and history."""
    (workspace / "notes.txt").write_text("first\n")
    audit, history = tmp_path / "audit.jsonl", tmp_path / "history"

    async def write() -> str:
        async with serve(FW, workspace, "--history-dir", str(history), audit=audit) as fw:
            result = await fw.call_tool("file_write", {"path": "notes.txt", "content": "second\n", "overwrite": True})
        assert not result.is_error, result
        return str((result.structured_content or {})["auditId"])

    return anyio.run(write), audit, history


def _guard(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([console_script("mcp-guard"), *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("forgery", ["changed", "unsealed", "another key"])
def test_attack_a_forged_call_record_is_not_undone_nor_listed(workspace: Path, tmp_path: Path, forgery: str) -> None:
    call, audit, history = _written(workspace, tmp_path)
    path = history / "calls" / f"{call}.json"
    record = json.loads(path.read_bytes())
    assert isinstance(record.get(SEAL), str)  # (every record written is sealed)
    if forgery == "changed":
        record["roots"] = ["/"]
    elif forgery == "unsealed":
        del record[SEAL]
    else:
        record[SEAL] = "0" * 64
    path.write_text(json.dumps(record))
    undone = _guard("undo", call, "--history-dir", str(history), "--audit-log", str(audit))
    assert undone.returncode != 0 and "not sealed" in undone.stdout + undone.stderr, undone
    assert (workspace / "notes.txt").read_text() == "second\n"
    listed = _guard("history", "--history-dir", str(history))
    assert listed.returncode == 0 and call not in listed.stdout, listed


def test_a_sealed_record_is_undone(workspace: Path, tmp_path: Path) -> None:
    call, audit, history = _written(workspace, tmp_path)
    listed = _guard("history", "--history-dir", str(history))
    assert call in listed.stdout, listed.stdout
    undone = _guard("undo", call, "--history-dir", str(history), "--audit-log", str(audit))
    assert undone.returncode == 0, undone.stderr
    assert (workspace / "notes.txt").read_text() == "first\n"


def test_an_untrusted_record_is_evicted_all_the_same(tmp_path: Path) -> None:
    # A record from before records were sealed would otherwise count in the history's bounds for ever.
    records = CallRecords(tmp_path / "calls")
    records.write("aaaaaaaaaaaa", {"audit_id": "aaaaaaaaaaaa", "changes": []})
    assert records.read("aaaaaaaaaaaa") == {"audit_id": "aaaaaaaaaaaa", "changes": []}
    (tmp_path / "calls" / "bbbbbbbbbbbb.json").write_text(json.dumps({"audit_id": "bbbbbbbbbbbb", "changes": []}))
    assert [r["audit_id"] for r in records.all()] == ["aaaaaaaaaaaa"]
    assert records.evict("bbbbbbbbbbbb") > 0
    assert not (tmp_path / "calls" / "bbbbbbbbbbbb.json").exists()
