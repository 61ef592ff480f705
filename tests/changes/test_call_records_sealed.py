"""Call records are sealed with the user's key (issue 42 item 3: no server trusts a record it did not write): a
record changed, stripped of its seal, or sealed with another key is not played backwards by `mcp-guard undo` unasked
(UNDO_ASKS: --yes), and `mcp-guard history` says so — but it is kept and guarded like any other (red team 101 A: a
key made anew must not lose anyone's work) — through the real console scripts."""

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
def test_attack_a_forged_call_record_is_not_undone_unasked(workspace: Path, tmp_path: Path, forgery: str) -> None:
    call, audit, history = _written(workspace, tmp_path)
    path = history / "calls" / f"{call}.json"
    record = json.loads(path.read_bytes())
    assert isinstance(record.get(SEAL), str)  # (every record written is sealed)
    if forgery == "changed":
        record["command"] = "a call nobody made"
    elif forgery == "unsealed":
        del record[SEAL]
    else:
        record[SEAL] = "0" * 64
    path.write_text(json.dumps(record))
    undone = _guard("undo", call, "--history-dir", str(history), "--audit-log", str(audit))
    assert undone.returncode == 2 and "not sealed" in undone.stderr, undone
    assert (workspace / "notes.txt").read_text() == "second\n"
    listed = _guard("history", "--history-dir", str(history))
    assert listed.returncode == 0 and call in listed.stdout and "not sealed" in listed.stdout, listed
    undone = _guard("undo", call, "--yes", "--history-dir", str(history), "--audit-log", str(audit))
    assert undone.returncode == 0, undone  # (the person's say: a key made anew must not lose a call)
    assert (workspace / "notes.txt").read_text() == "first\n"


def test_a_sealed_record_is_undone(workspace: Path, tmp_path: Path) -> None:
    call, audit, history = _written(workspace, tmp_path)
    listed = _guard("history", "--history-dir", str(history))
    assert call in listed.stdout and "not sealed" not in listed.stdout, listed.stdout
    undone = _guard("undo", call, "--history-dir", str(history), "--audit-log", str(audit))
    assert undone.returncode == 0, undone.stderr
    assert (workspace / "notes.txt").read_text() == "first\n"


def test_an_unsealed_record_is_kept_listed_and_evicted_like_any_other(tmp_path: Path) -> None:
    # Red team 101 A: what it keeps may be the only copy of someone's work (a record from before records were
    # sealed, or sealed with a key made since): it is guarded as before, never dropped.
    records = CallRecords(tmp_path / "calls")
    records.write("aaaaaaaaaaaa", {"audit_id": "aaaaaaaaaaaa", "changes": []})
    assert records.read("aaaaaaaaaaaa") == {"audit_id": "aaaaaaaaaaaa", "changes": []}
    (tmp_path / "calls" / "bbbbbbbbbbbb.json").write_text(json.dumps({"audit_id": "bbbbbbbbbbbb", "changes": []}))
    assert [r["audit_id"] for r in records.all()] == ["aaaaaaaaaaaa", "bbbbbbbbbbbb"]
    assert not records.unsealed("aaaaaaaaaaaa") and records.unsealed("bbbbbbbbbbbb")
    assert records.evict("bbbbbbbbbbbb") > 0
    assert not (tmp_path / "calls" / "bbbbbbbbbbbb.json").exists()


def test_the_list_of_evicted_calls_stays_small_as_it_counts_in_the_stores_bounds(tmp_path: Path) -> None:
    # A 64 KiB store rewriting one file 150 times filled itself with its own list of evictions, then refused the
    # next write rather than push out the user's only copy (tests/servers/test_file_write_reliability.py).
    records = CallRecords(tmp_path / "calls")
    for index in range(300):
        audit_id = f"{index:012x}"
        records.write(audit_id, {"audit_id": audit_id, "tool": "file_write", "command": "x" * 150, "changes": []})
        records.evict(audit_id)
    listed = (tmp_path / "calls" / "evicted.jsonl").read_bytes()
    assert len(listed) <= 8 << 10 and json.loads(listed.splitlines()[-1])["audit_id"] == f"{299:012x}"
