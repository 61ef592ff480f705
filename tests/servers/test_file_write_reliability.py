"""Faults found by a soak run through the real console scripts (issue 8), each replayed for real.

The audit log on a full disk (no record, no action), a writer killed mid-write (its temp file is
removed by the next start, never a live writer's), a history store that is full, broken or unbounded,
and many agents overwriting one file at once. Disks fill up in a tiny tmpfs in a private mount
namespace (``unshare -rm``), never on the host.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from support import MODES, RawClient, console_script, serve
from support.small_disk import small_disk

FW = "mcp-server-file-write"
FR = "mcp-server-file-read"
SX = "mcp-server-shell-exec"
TEMP_PREFIX = ".mcp-guard-"


def _can_unshare() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-rm", "true"], capture_output=True, timeout=10).returncode == 0


needs_unshare = pytest.mark.skipif(not _can_unshare(), reason="unprivileged user+mount namespaces are not available")


def call(raw: RawClient, id_: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    # A bound, not a pace: a server starting beside one frozen mid-write waits for what the frozen one holds.
    message = raw.request(id_, "tools/call", {"name": tool, "arguments": arguments}, timeout=60)
    assert "result" in message, f"not a tool result: {message}"
    return dict(message["result"])


def error_code(result: dict[str, Any]) -> dict[str, Any]:
    assert result.get("isError"), f"expected a refusal, got {result}"
    payload = result.get("_meta", {}).get("mcp-guard/error")
    assert isinstance(payload, dict), f"no structured error in {result}"
    return dict(payload)


def in_tmpfs(tmpfs: Path, prepare: str, server: list[str], cwd: Path, stderr: Path | None = None) -> RawClient:
    """A server started in a private mount namespace where ``tmpfs`` is a fresh 256 KiB tmpfs.

    ``prepare`` runs in the tmpfs first (``$T`` names it); the server then runs with its stderr in ``stderr``.
    """
    tmpfs.mkdir(exist_ok=True)
    script = (
        'T="$1"; shift; ERR="$1"; shift; mount -t tmpfs -o size=256k tmpfs "$T" && cd "$T" && '
        f'{{ {prepare} ; }} && cd "$OLDPWD" && exec "$@" 2>"$ERR"'
    )
    err = str(stderr) if stderr is not None else "/dev/null"
    return RawClient(["unshare", "-rm", "sh", "-c", script, "sh", str(tmpfs), err, *server], cwd)


# Fills the tmpfs to the last page (dd stops at ENOSPC).
FILL = "dd if=/dev/zero of=fill bs=4096 2>/dev/null; true"


# -- 4. no audit record, no action --------------------------------------------------------------


@needs_unshare
@pytest.mark.parametrize("server", ["file_write", "file_read", "shell_exec"])
def test_audit_log_on_a_full_disk_means_no_action_and_audit_unavailable(
    workspace: Path, tmp_path: Path, server: str
) -> None:
    tmpfs = tmp_path / "auditfs"
    history = tmp_path / "history"
    argv = {
        "file_write": [console_script(FW), "--history-dir", str(history)],
        "file_read": [console_script(FR)],
        "shell_exec": [console_script(SX), "--sandbox", "off"],
    }[server]
    table: dict[str, list[tuple[str, dict[str, Any]]]] = {
        "file_write": [
            ("file_write", {"path": "new.txt", "content": "created\n"}),
            ("file_write", {"path": "hello.txt", "content": "replaced\n", "overwrite": True}),
        ],
        "file_read": [("file_read", {"path": "hello.txt"})],
        "shell_exec": [
            ("shell_exec", {"command": "touch marker"}),
            ("shell_exec", {"command": "touch", "args": ["m2"]}),
        ],
    }
    calls = table[server]
    raw = in_tmpfs(tmpfs, f": > audit.jsonl && {FILL}", [*argv, "--audit-log", str(tmpfs / "audit.jsonl")], workspace)
    try:
        raw.initialize()
        results = [call(raw, i + 1, tool, args) for i, (tool, args) in enumerate(calls)]
    finally:
        raw.close()
    for result in results:
        payload = error_code(result)
        assert payload["code"] == "AUDIT_UNAVAILABLE" and payload["category"] == "SYSTEM", payload
        assert "hello" not in json.dumps(result)  # file_read handed out nothing
    assert not (workspace / "new.txt").exists()
    assert (workspace / "hello.txt").read_text(encoding="utf-8") == "hello\nworld\n"
    assert not (workspace / "marker").exists() and not (workspace / "m2").exists()  # no record, no command
    assert not history.exists() or not [p for p in history.iterdir() if p.suffix == ".data"]
    assert not [p for p in workspace.iterdir() if p.name.startswith(TEMP_PREFIX)]


def _padding_line(size: int) -> bytes:
    """A valid JSON line of exactly ``size`` bytes (newline included)."""
    frame = b'{"pad": ""}\n'
    return b'{"pad": "' + b"x" * (size - len(frame)) + b'"}\n'


@needs_unshare
def test_audit_outcome_that_cannot_be_written_does_not_turn_a_done_write_into_a_failure(
    workspace: Path, tmp_path: Path
) -> None:
    page = os.sysconf("SC_PAGE_SIZE")
    history = tmp_path / "history"
    args = {"path": "done.txt", "content": "written once\n"}
    # Calibrate: how long is the record written before the action, for exactly this call?
    calibration = tmp_path / "calibration"
    calibration.mkdir()
    cal_log = tmp_path / "cal-audit.jsonl"
    raw = RawClient([console_script(FW), "--audit-log", str(cal_log), "--history-dir", str(history)], calibration)
    try:
        raw.initialize()
        assert not call(raw, 1, "file_write", args).get("isError")
    finally:
        raw.close()
    first = cal_log.read_bytes().splitlines(keepends=True)[0]
    # The log's last page has room for that record (and some slack), not for the closing one; the disk is full.
    prefill = tmp_path / "prefill.jsonl"
    prefill.write_bytes(_padding_line(page - len(first) - 64))
    stderr = tmp_path / "server.stderr"
    tmpfs = tmp_path / "auditfs"
    raw = in_tmpfs(
        tmpfs,
        f'cp "{prefill}" audit.jsonl && {FILL}',
        [console_script(FW), "--audit-log", str(tmpfs / "audit.jsonl"), "--history-dir", str(history)],
        workspace,
        stderr,
    )
    try:
        raw.initialize()
        result = call(raw, 1, "file_write", args)
        again = call(raw, 2, "file_write", {"path": "second.txt", "content": "x"})
    finally:
        raw.close()
    assert not result.get("isError"), result
    assert result["structuredContent"]["success"] is True and result["structuredContent"]["created"] is True
    assert (workspace / "done.txt").read_text(encoding="utf-8") == "written once\n"
    # The next call cannot record its intent any more: refused, not done.
    assert error_code(again)["code"] == "AUDIT_UNAVAILABLE" and not (workspace / "second.txt").exists()
    complaints = [line for line in stderr.read_text(encoding="utf-8").splitlines() if "audit" in line.lower()]
    assert complaints, "the lost closing record must be reported on stderr"
    assert "outcome" in complaints[0] and "Traceback" not in stderr.read_text(encoding="utf-8")
    assert len([c for c in complaints if "outcome" in c]) == 2  # one line per lost record, no traceback


def test_audit_log_pairs_intent_and_outcome_and_shows_a_call_cut_short_by_a_crash(
    workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "audit.jsonl"
    sleep = f"sleep 47.{uuid.uuid4().int % 10**8}"  # unique: finds this test's process (and only it)
    raw = RawClient([console_script(SX), "--audit-log", str(log), "--sandbox", "off"], workspace)
    try:
        raw.initialize()
        assert call(raw, 1, "shell_exec", {"command": "echo done"})["structuredContent"]["exitCode"] == 0
        raw.send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "shell_exec", "arguments": {"command": sleep}},
            }
        )
        deadline = time.monotonic() + 20
        while sleep not in log.read_text(encoding="utf-8"):
            assert time.monotonic() < deadline, "no record of the running command"
            time.sleep(0.01)
        raw.proc.send_signal(signal.SIGKILL)  # the server dies mid-call
    finally:
        raw.close()
        for proc in psutil.process_iter(["cmdline"]):
            with contextlib.suppress(psutil.Error):
                if sleep in " ".join(proc.info["cmdline"] or []):
                    proc.kill()
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [r["phase"] for r in records] == ["intent", "outcome", "intent"]
    assert records[0]["audit_id"] == records[1]["audit_id"] != records[2]["audit_id"]
    assert len({r["audit_id"] for r in records}) == 2
    env = {**os.environ, "HOME": str(tmp_path)}
    shown = subprocess.run(
        [console_script("mcp-guard"), "audit", "--audit-log", str(log)],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
    )
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.strip().splitlines()
    assert len(lines) == 2, lines  # one line per call
    assert "allow" in lines[0] and "echo done" in lines[0]
    assert sleep in lines[1] and "interrupted" in lines[1].lower()


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_an_approved_command_has_one_intent_written_in_the_round_that_runs_it(
    workspace: Path, tmp_path: Path, mode: str
) -> None:
    from mcp.client import ClientRequestContext
    from mcp.types import ElicitRequestParams, ElicitResult

    policy = tmp_path / "ask.toml"
    policy.write_text(
        '[shell_exec]\nmode = "denylist"\n[[shell_exec.rules]]\nid = "ask-touch"\naction = "ask"\n'
        'reason = "touch needs a yes."\nprograms = ["touch"]\n',
        encoding="utf-8",
    )
    log = tmp_path / "audit.jsonl"
    asked: list[str] = []

    async def elicit(_ctx: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        # At the moment the human is asked, nothing has acted: no record of intent yet.
        assert not log.exists() or '"phase": "intent"' not in log.read_text(encoding="utf-8")
        return ElicitResult(action="accept", content={"approve": True})

    args = ("--policy", str(policy), "--sandbox", "off")
    async with serve(SX, workspace, *args, mode=mode, audit=log, elicitation_callback=elicit) as client:
        with anyio.fail_after(60):
            result = await client.call_tool("shell_exec", {"command": "touch approved.txt"})
    assert result.structured_content is not None and result.structured_content["policyDecision"] == "ask-approved"
    assert len(asked) == 1 and (workspace / "approved.txt").exists()
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [r["phase"] for r in records] == ["intent", "outcome"]  # the input_required round left no record
    assert records[0]["audit_id"] == records[1]["audit_id"]
    assert records[1]["policy_result"] == "ask-approved" and records[1]["rule"] == "ask-touch"
    assert records[1]["approved_by"] == "human:elicitation" and records[0]["target"] == "touch approved.txt"


# -- 5. crash leftovers ------------------------------------------------------------------------


def _temps(directory: Path) -> list[str]:
    return sorted(n for n in os.listdir(directory) if n.startswith(TEMP_PREFIX) and n.endswith(".tmp"))


def _catch_writer(
    workspace: Path,
    history: Path,
    audit: Path,
    sig: signal.Signals,
    *,
    old: bytes,
    new: str,
    in_flight: Callable[[], list[str]],
) -> RawClient:
    """Overwrite big.txt (``old`` -> ``new``) through a real writer and send it ``sig`` the moment ``in_flight``
    shows something new (its temp file, or its history save); retried when the write finishes first."""
    already = set(in_flight())
    for _attempt in range(10):
        (workspace / "big.txt").write_bytes(old)
        raw = RawClient([console_script(FW), "--audit-log", str(audit), "--history-dir", str(history)], workspace)
        raw.initialize()
        arguments = {"path": "big.txt", "content": new, "overwrite": True}
        raw.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "file_write", "arguments": arguments},
            }
        )
        assert raw.proc.stdout is not None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if set(in_flight()) - already:
                raw.proc.send_signal(sig)
                return raw
            if select.select([raw.proc.stdout.fileno()], [], [], 0)[0]:
                break  # the write finished before we caught it: try again
        raw.proc.kill()
        raw.close()
    raise AssertionError("never caught the writer in flight")


def _catch_temp_file(workspace: Path, history: Path, audit: Path, sig: signal.Signals) -> RawClient:
    """Start a writer on a big overwrite and send it ``sig`` the moment its temp file appears."""
    return _catch_writer(
        workspace, history, audit, sig, old=b"A" * (1 << 20), new="B" * (8 << 20), in_flight=lambda: _temps(workspace)
    )


def test_temp_file_of_a_writer_killed_mid_write_is_removed_at_the_next_start(workspace: Path, tmp_path: Path) -> None:
    history, audit = tmp_path / "history", tmp_path / "audit.jsonl"
    foreign = workspace / ".mcp-guard-0123456789ab.tmp"  # our naming, but no server of ours wrote it
    foreign.write_text("not ours to delete\n", encoding="utf-8")
    raw = _catch_temp_file(workspace, history, audit, signal.SIGKILL)
    raw.close()
    left = [n for n in _temps(workspace) if n != foreign.name]
    assert left, "the kill left no temp file behind: nothing to test"
    assert (workspace / "big.txt").read_bytes() in (b"A" * (1 << 20), b"B" * (8 << 20))
    restarted = RawClient([console_script(FW), "--audit-log", str(audit), "--history-dir", str(history)], workspace)
    try:
        restarted.initialize()
        assert not call(restarted, 1, "file_write", {"path": "after.txt", "content": "ok\n"}).get("isError")
    finally:
        restarted.close()
    assert _temps(workspace) == [foreign.name]  # the dead writer's temp file is gone, nothing else touched
    assert foreign.read_text(encoding="utf-8") == "not ours to delete\n"


def test_a_live_writers_temp_file_is_never_removed_by_another_server_starting(workspace: Path, tmp_path: Path) -> None:
    history, audit = tmp_path / "history", tmp_path / "audit.jsonl"
    writer = _catch_temp_file(workspace, history, audit, signal.SIGSTOP)  # alive, frozen mid-write
    try:
        in_flight = _temps(workspace)
        other = RawClient([console_script(FW), "--audit-log", str(audit), "--history-dir", str(history)], workspace)
        try:
            other.initialize()
            assert not call(other, 1, "file_write", {"path": "other.txt", "content": "ok\n"}).get("isError")
        finally:
            other.close()
        assert _temps(workspace) == in_flight  # the live writer's temp file was not touched
        writer.proc.send_signal(signal.SIGCONT)
        answer = writer.recv(timeout=60)
        assert answer["id"] == 1 and not answer["result"].get("isError"), answer
    finally:
        writer.proc.send_signal(signal.SIGCONT)
        writer.close()
    assert (workspace / "big.txt").read_bytes() == b"B" * (8 << 20)
    assert _temps(workspace) == []


def _history_cli(*args: str, cwd: Path, history: Path, audit: Path | None = None) -> subprocess.CompletedProcess[str]:
    extra = ["--audit-log", str(audit)] if audit is not None else []
    return subprocess.run(
        [console_script("mcp-guard"), "history", *args, "--history-dir", str(history), *extra],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "XDG_STATE_HOME": str(cwd.parent / "state")},
    )


def _overwrite(workspace: Path, history: Path, audit: Path, contents: list[str], *policy: str) -> list[str]:
    """Overwrite hello.txt with each of ``contents`` through a real server; the history ids it reports."""
    raw = RawClient([console_script(FW), "--audit-log", str(audit), "--history-dir", str(history), *policy], workspace)
    try:
        raw.initialize()
        results = [
            call(raw, i + 1, "file_write", {"path": "hello.txt", "content": c, "overwrite": True})
            for i, c in enumerate(contents)
        ]
    finally:
        raw.close()
    for result in results:
        assert not result.get("isError"), result
    return [str(r["structuredContent"]["backup"]) for r in results]


def test_history_entry_whose_data_file_is_gone_is_reported_not_a_raw_errno(workspace: Path, tmp_path: Path) -> None:
    history, audit = tmp_path / "history", tmp_path / "audit.jsonl"
    broken, intact = _overwrite(workspace, history, audit, ["v2\n", "v3\n"])
    (history / f"{broken}.data").unlink()  # what a crash during eviction used to leave
    listed = _history_cli("list", cwd=workspace, history=history)
    assert intact in listed.stdout and broken not in listed.stdout, listed.stdout
    assert broken in listed.stderr and "HISTORY_BROKEN" in listed.stderr
    restored = _history_cli("restore", broken, cwd=workspace, history=history, audit=audit)
    assert restored.returncode == 1, restored
    assert "HISTORY_BROKEN" in restored.stderr and broken in restored.stderr
    assert "Errno" not in restored.stderr and "Traceback" not in restored.stderr
    assert len(restored.stderr.strip().splitlines()) == 1
    assert (workspace / "hello.txt").read_text(encoding="utf-8") == "v3\n"
    missing = _history_cli("restore", "20200101T000000000000Z-abcdef", cwd=workspace, history=history, audit=audit)
    assert missing.returncode == 1 and "HISTORY_NOT_FOUND" in missing.stderr
    ok = _history_cli("restore", intact, cwd=workspace, history=history, audit=audit)
    assert ok.returncode == 0, ok.stderr
    assert (workspace / "hello.txt").read_text(encoding="utf-8") == "v2\n"


def _orphans(history: Path) -> list[str]:
    """History ids with data but no metadata: saves in flight, or what a dead writer left."""
    names = set(os.listdir(history)) if history.exists() else set()
    ids = {n.split(".")[0] for n in names if re.fullmatch(r"\d{8}T\d{12}Z-[0-9a-f]{6}\.data", n)}
    return sorted(i for i in ids if f"{i}.json" not in names)


def _catch_history_save(workspace: Path, history: Path, audit: Path, sig: signal.Signals) -> RawClient:
    """Start a writer on an overwrite of a big file and send it ``sig`` while it copies the previous version
    into the history (its data file is there, its metadata not yet)."""
    return _catch_writer(
        workspace, history, audit, sig, old=b"A" * (48 << 20), new="B", in_flight=lambda: _orphans(history)
    )


def test_history_data_a_killed_writer_left_goes_at_the_next_start_whatever_its_age(
    workspace: Path, tmp_path: Path
) -> None:
    # (a history on another file system than the file: the previous version is copied, not kept as a new name)
    with small_disk("160m") as disk:
        _killed_writers_left_data(workspace, disk / "history", tmp_path / "audit.jsonl")


def _killed_writers_left_data(workspace: Path, history: Path, audit: Path) -> None:
    history.mkdir()
    unrelated = history / "notes.data"  # not a name of ours: never touched
    unrelated.write_bytes(b"mine")
    left: list[str] = []
    for _kill in range(3):
        raw = _catch_history_save(workspace, history, audit, signal.SIGKILL)
        raw.close()
        left = _orphans(history)
        # Each start removed what the writer killed before it left: one orphan at a time, never a pile.
        assert len(left) == 1, left
    prune = _history_cli("prune", cwd=workspace, history=history)
    assert prune.returncode == 0, prune.stderr
    assert "1 orphan(s) removed" in prune.stdout
    assert _orphans(history) == [] and unrelated.read_bytes() == b"mine"
    assert [p for p in (history / ".owners").iterdir()] == []  # the dead writers' notes went with them
    _overwrite(workspace, history, audit, ["v2\n"])
    assert _orphans(history) == []


def test_a_live_writers_history_save_is_never_removed_by_another_server_or_by_prune(
    workspace: Path, tmp_path: Path
) -> None:
    with small_disk("160m") as disk:  # (a history on another file system: copied)
        _live_writers_save_kept(workspace, disk / "history", tmp_path / "audit.jsonl")


def _live_writers_save_kept(workspace: Path, history: Path, audit: Path) -> None:
    writer = _catch_history_save(workspace, history, audit, signal.SIGSTOP)  # alive, frozen mid-save
    try:
        in_flight = _orphans(history)
        _overwrite(workspace, history, audit, ["other\n"])  # another server starts and saves meanwhile
        prune = _history_cli("prune", cwd=workspace, history=history)
        assert prune.returncode == 0 and "0 orphan(s) removed" in prune.stdout, prune
        assert _orphans(history) == in_flight
        writer.proc.send_signal(signal.SIGCONT)
        answer = writer.recv(timeout=60)
        assert answer["id"] == 1 and not answer["result"].get("isError"), answer
        backup = answer["result"]["structuredContent"]["backup"]
    finally:
        writer.proc.send_signal(signal.SIGCONT)
        writer.close()
    assert _orphans(history) == []
    assert (history / f"{backup}.data").stat().st_size == 48 << 20


def test_history_data_an_unfinished_apply_still_needs_is_not_an_orphan(workspace: Path, tmp_path: Path) -> None:
    """A dead shell_exec server's apply journal names the pre-images it moved into the history before it wrote
    their metadata: the next shell_exec start finishes that apply with them, so no sweep may take them first."""
    history, audit = tmp_path / "history", tmp_path / "audit.jsonl"
    (history / ".journal").mkdir(parents=True)
    needed, dead = "20200101T000000000000Z-aaaaaa", "20200101T000000000001Z-bbbbbb"
    for entry_id in (needed, dead):
        (history / f"{entry_id}.data").write_bytes(b"pre-image")
    plan = {
        "audit_id": "0123456789ab",
        "ops": [{"kind": "modify", "root": str(workspace), "path": "x", "entry": needed}],
    }
    (history / ".journal" / "apply-0123456789ab.json").write_text(json.dumps(plan) + "\n", encoding="utf-8")
    _overwrite(workspace, history, audit, ["v2\n"])
    assert _orphans(history) == [needed]


# -- 6. many writers, one file -----------------------------------------------------------------


def test_200_concurrent_overwrites_of_one_file_are_serialized_not_refused(workspace: Path, tmp_path: Path) -> None:
    history, audit = tmp_path / "history", tmp_path / "audit.jsonl"
    (workspace / "shared.txt").write_text("initial\n", encoding="utf-8")
    contents = [f"writer {i}\n" for i in range(200)]
    raw = RawClient([console_script(FW), "--audit-log", str(audit), "--history-dir", str(history)], workspace)
    try:
        raw.initialize()
        for i, content in enumerate(contents):
            raw.send(
                {
                    "jsonrpc": "2.0",
                    "id": 1000 + i,
                    "method": "tools/call",
                    "params": {
                        "name": "file_write",
                        "arguments": {"path": "shared.txt", "content": content, "overwrite": True},
                    },
                }
            )
        answers: dict[int, dict[str, Any]] = {}
        while len(answers) < len(contents):
            message = raw.recv(timeout=60)
            if "id" in message:
                answers[int(message["id"])] = message["result"]
    finally:
        raw.close()
    refused = [a["_meta"]["mcp-guard/error"]["code"] for a in answers.values() if a.get("isError")]
    assert refused == [], f"{len(refused)} refused: {sorted(set(refused))}"
    final = (workspace / "shared.txt").read_text(encoding="utf-8")
    assert final in contents
    saved = sorted(p.read_text(encoding="utf-8") for p in history.glob("*.data"))
    assert saved == sorted([c for c in contents if c != final] + ["initial\n"])  # every previous content kept once


# -- 7. a full history store -------------------------------------------------------------------


@needs_unshare
def test_full_history_store_is_reported_as_history_full_naming_the_store(workspace: Path, tmp_path: Path) -> None:
    tmpfs = tmp_path / "histfs"
    store = tmpfs / "history"
    raw = in_tmpfs(
        tmpfs,
        f"mkdir history && {FILL}",
        [console_script(FW), "--audit-log", str(tmp_path / "audit.jsonl"), "--history-dir", str(store)],
        workspace,
    )
    try:
        raw.initialize()
        result = call(raw, 1, "file_write", {"path": "hello.txt", "content": "new\n", "overwrite": True})
    finally:
        raw.close()
    payload = error_code(result)
    assert payload["code"] == "HISTORY_FULL", payload
    assert str(store) in payload["message"] and "history store" in payload["message"]
    assert "mcp-guard history list" in payload["suggestion"] and "history_max_bytes" in payload["suggestion"]
    assert "write less" not in payload["suggestion"].lower()
    assert (workspace / "hello.txt").read_text(encoding="utf-8") == "hello\nworld\n"
    assert not [p for p in workspace.iterdir() if p.name.startswith(TEMP_PREFIX)]


# -- 12. a history store that stays bounded ----------------------------------------------------


def _store_usage(history: Path) -> tuple[int, int]:
    """(entries, bytes on disk of their data and metadata files) of a history store."""
    files = [p for p in history.iterdir() if p.suffix in (".data", ".json")]
    used = sum(max(p.stat().st_size, p.stat().st_blocks * 512) for p in files)
    return len({p.stem for p in files}), used


def test_history_of_empty_overwrites_stays_within_history_max_bytes(workspace: Path, tmp_path: Path) -> None:
    history, audit = tmp_path / "history", tmp_path / "audit.jsonl"
    policy = tmp_path / "p.toml"
    policy.write_text("[file_write]\nhistory_max_bytes = 65536\n", encoding="utf-8")
    (workspace / "hello.txt").write_text("", encoding="utf-8")
    # Each write changes the file (an identical write keeps no entry): near-empty pre-images, one after another.
    _overwrite(workspace, history, audit, ["x" if i % 2 == 0 else "" for i in range(150)], "--policy", str(policy))
    entries, used = _store_usage(history)
    assert used <= 65536, f"{entries} entries use {used} bytes"
    assert entries >= 1


def test_history_keeps_at_most_history_max_entries(workspace: Path, tmp_path: Path) -> None:
    history, audit = tmp_path / "history", tmp_path / "audit.jsonl"
    policy = tmp_path / "p.toml"
    policy.write_text("[file_write]\nhistory_max_bytes = 1048576\nhistory_max_entries = 10\n", encoding="utf-8")
    (workspace / "hello.txt").write_text("", encoding="utf-8")
    backups = _overwrite(workspace, history, audit, ["x" if i % 2 == 0 else "" for i in range(150)], "--policy",
                         str(policy))  # fmt: skip
    entries, used = _store_usage(history)
    assert 5 <= entries <= 10 and used <= 1048576
    # The newest are kept, and the first: what it replaced was the user's, in no repository (its only copy); every
    # later one replaced the writer's own output.
    kept = sorted(p.stem for p in history.glob("*.json"))
    assert kept == sorted([backups[0], *backups[-(entries - 1) :]])
