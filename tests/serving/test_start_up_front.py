"""The first answers before the SDK is loaded (``serving.front``), through the real console scripts.

A start records its answers to ``initialize`` and ``tools/list``; the next start with the same command line,
directories, environment and code answers them from that record while it is still loading, and the real server
still sees every line: one answer per request, the same answers, and a record that no longer matches is
replaced.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_server_guard.paths import where_line
from mcp_server_guard.serving import front_records
from support import RawClient, console_script
from support.records import read_record, write_record

SERVERS = ["mcp-server-file-read", "mcp-server-file-write", "mcp-server-shell-exec"]
INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "front-test", "version": "1"}}
# Last in every session: a request the front leaves to the real server, so that the SDK loads (a file server's front
# answers the rest alone and never loads it), sees the handshake, compares its answers and keeps its record. Its
# answer is not among those returned.
SDK_LINE: dict[str, Any] = {"jsonrpc": "2.0", "id": 99, "method": "resources/list"}


def _session(
    script: str,
    workspace: Path,
    tail: list[dict[str, Any]] | None = None,
    *,
    cwd: Path | None = None,
    answers: dict[Any, int] | None = None,
) -> list[dict[str, Any]]:
    """Spawn (in ``cwd``, else the workspace), send the handshake, tools/list and ``tail`` at once, wait for the
    last answer (and, ``answers``, for that many answers to each id: a tool call is answered beside the SDK's
    dispatcher, maybe after the last line's answer; at stdin's end a call still running is not), close stdin:
    every line the server wrote."""
    argv = [console_script(script), "--audit-log", str(workspace.parent / "audit.jsonl")]
    client = RawClient(argv, cwd or workspace)
    lines: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
        *(tail or []),
        SDK_LINE,
    ]
    last = SDK_LINE["id"]
    try:
        client.send_raw(b"".join(json.dumps(m).encode() + b"\n" for m in lines))
        seen = client.until(last, timeout=60)
        for id_, count in (answers or {}).items():
            while sum(1 for m in seen if "method" not in m and m.get("id") == id_) < count:
                seen.append(client.recv(60))
        assert client.proc.stdin is not None
        client.proc.stdin.close()
        rest = client.read_to_eof(timeout=60)  # nothing more: no second answer to a request the front answered
    finally:
        client.close()
    return [m for m in seen + [json.loads(line) for line in rest.splitlines()] if m.get("id") != SDK_LINE["id"]]


def _records(home: Path) -> list[Path]:
    return sorted((home / ".local" / "state" / "mcp-guard" / "front").glob("*.json"))


@pytest.mark.parametrize("script", SERVERS)
def test_a_second_start_answers_the_same_and_once_per_request(
    script: str, workspace: Path, isolated_home: Path
) -> None:
    first = _session(script, workspace)
    assert [m["id"] for m in first] == [1, 2, 3]
    [record] = _records(isolated_home)
    assert oct(record.stat().st_mode & 0o777) == "0o600"
    second = _session(script, workspace)
    assert second == first  # the same answers, each request answered exactly once


def test_a_start_answers_from_its_record_and_a_record_that_differs_is_replaced(
    workspace: Path, isolated_home: Path
) -> None:
    # Proof that the front answered (and that a stale record heals): a record edited by hand is what the next
    # start answers with; the real server's own answer then differs, is logged, and replaces the record.
    script = "mcp-server-file-read"
    first = _session(script, workspace)
    [record] = _records(isolated_home)
    kept = read_record(record)
    init_key = next(k for k, v in kept.items() if "serverInfo" in v)
    kept[init_key]["instructions"] = "EDITED"
    write_record(record, kept)
    stale = _session(script, workspace)
    assert stale[0]["result"]["instructions"] == "EDITED"
    assert [m["id"] for m in stale] == [1, 2, 3]
    healed = _session(script, workspace)
    assert healed == first


def test_a_record_kept_in_one_project_is_never_the_answer_in_another(workspace: Path, isolated_home: Path) -> None:
    # A record is keyed by the allowed directories too: a start in another project is answered by the real server
    # (a mark added to the first project's record never shows there), and keeps a record of its own.
    script = "mcp-server-shell-exec"
    other = workspace.parent / "other-project"
    other.mkdir()
    _session(script, workspace)
    [record] = _records(isolated_home)
    kept = read_record(record)
    init_key = next(k for k, v in kept.items() if "serverInfo" in v)
    kept[init_key]["instructions"] += " MARK"
    write_record(record, kept)
    elsewhere = _session(script, workspace, cwd=other)
    assert "MARK" not in elsewhere[0]["result"]["instructions"]
    assert (
        f"Allowed directories: {other} (relative paths are taken from {other};"
        in elsewhere[0]["result"]["instructions"]
    )
    assert len(_records(isolated_home)) == 2
    again = _session(script, workspace)  # the first project's record is still its own (proof: the mark)
    assert again[0]["result"]["instructions"].endswith(" MARK")


@pytest.mark.parametrize("host_cwd", ["root", "home"])
def test_with_a_launch_directory_the_record_answers_from_any_host_working_directory(
    workspace: Path, isolated_home: Path, host_cwd: str
) -> None:
    # As `mcp-guard config` prints them, hosts start servers from / or HOME with --launch-dir naming the project:
    # the host's working directory is no allowed directory then, so the state directory is not "inside a root".
    script = "mcp-server-file-read"
    argv = [
        console_script(script),
        "--audit-log",
        str(workspace.parent / "audit.jsonl"),
        "--launch-dir",
        str(workspace),
    ]
    cwd = Path("/") if host_cwd == "root" else isolated_home

    def handshake() -> dict[str, Any]:
        client = RawClient(argv, cwd)
        try:
            answer: dict[str, Any] = client.request(1, "initialize", INIT)
            client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            client.request(99, "resources/list")  # the real server keeps the record
            return answer
        finally:
            client.close()

    first = handshake()
    [record] = _records(isolated_home)
    kept = read_record(record)
    init_key = next(k for k, v in kept.items() if "serverInfo" in v)
    kept[init_key]["instructions"] += " MARK"
    write_record(record, kept)
    marked = handshake()  # answered from the record (proof: the mark), naming the launch directory
    assert marked["result"]["instructions"] == first["result"]["instructions"] + " MARK"
    assert f"(relative paths are taken from {workspace};" in first["result"]["instructions"]


def test_a_start_whose_launch_directory_is_missing_gets_no_answer_from_the_record(
    workspace: Path, isolated_home: Path
) -> None:
    script = "mcp-server-file-read"
    argv = [console_script(script), "--audit-log", str(workspace.parent / "audit.jsonl"), "--launch-dir"]
    client = RawClient([*argv, str(workspace)], workspace)
    try:
        client.initialize()
        client.request(99, "resources/list")  # the real server keeps the record
    finally:
        client.close()
    assert _records(isolated_home)
    missing = subprocess.run(
        [*argv, str(workspace / "gone")],
        input=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}).encode() + b"\n",
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert missing.returncode == 2 and missing.stdout == b""  # only the real server's refusal to start
    assert b"no such directory" in missing.stderr


def test_the_directories_a_start_names_are_the_jails_and_a_record_naming_them_elsewhere_is_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "a")
    monkeypatch.chdir(tmp_path / "a")
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    assert front_records.where(["--allow-path", "../link", f"--allow-path={b}"]) == (f"{a}, {b}", a)
    assert front_records.where(["--launch-dir", b, "--allow-path", a]) == (f"{b}, {a}", b)
    assert front_records.where(["--allow-path", str(tmp_path / "gone")]) is None
    instructions = f"Permission mode: x. {where_line(a, a)} nothing outside."
    answer = {"serverInfo": {}, "instructions": instructions}
    kept = front_records.template({"k": answer}, [])
    assert kept is not None and a not in json.dumps(kept)
    assert front_records.filled(kept, []) == {"k": answer}
    assert front_records.template({"k": answer, "t": {"tools": [{"description": f"see {a}"}]}}, []) is None
    assert front_records.template({"k": {"serverInfo": {}, "instructions": "no directories"}}, []) is None


def _planted(home: Path) -> tuple[Path, dict[str, Any]]:
    """The one record kept, and its answers with the instructions a model reads replaced."""
    [record] = _records(home)
    kept = read_record(record)
    for value in kept.values():
        if "serverInfo" in value:
            value["instructions"] = "PLANTED"
    return record, kept


def test_a_record_not_sealed_with_the_users_key_is_not_used(workspace: Path, isolated_home: Path) -> None:
    # Threat (red team 96 F1): a record a command planted where a state directory was: private, the user's, but not
    # sealed with the key only the servers' registry holds.
    script = "mcp-server-file-read"
    first = _session(script, workspace)
    record, kept = _planted(isolated_home)
    record.write_text(json.dumps(kept))  # unsealed
    assert _session(script, workspace)[0] == first[0]
    record.write_bytes(b"0" * 64 + b"\n" + json.dumps(kept).encode())  # sealed with another key
    assert _session(script, workspace)[0] == first[0]


def test_a_record_that_is_not_private_or_is_a_link_is_not_used(workspace: Path, isolated_home: Path) -> None:
    # Threat: another user (or a link into a file someone else controls) planting the answers a model reads.
    script = "mcp-server-file-read"
    first = _session(script, workspace)
    record, kept = _planted(isolated_home)
    write_record(record, kept)
    record.chmod(0o644)
    assert _session(script, workspace)[0] == first[0]
    planted = isolated_home / "planted.json"
    write_record(planted, kept)
    planted.chmod(0o600)
    record.unlink()
    record.symlink_to(planted)
    assert _session(script, workspace)[0] == first[0]


def test_after_the_answered_handshake_a_call_and_a_bad_line_are_the_real_servers(
    workspace: Path, isolated_home: Path
) -> None:
    (workspace / "a.txt").write_text("hello\n")
    script = "mcp-server-file-read"
    _session(script, workspace)
    call = {
        "jsonrpc": "2.0",
        "id": 4,
        "method": "tools/call",
        "params": {"name": "file_read", "arguments": {"path": "a.txt"}},
    }
    out = _session(script, workspace, [call, {"jsonrpc": "2.0", "id": 5, "method": "nope"}], answers={4: 1})
    by_id = {m["id"]: m for m in out}
    assert sorted(by_id) == [1, 2, 3, 4, 5] and len(out) == 5, out
    assert "hello" in json.dumps(by_id[4]["result"]) and "error" in by_id[5]
    assert _records(isolated_home)  # still one record, unchanged
    assert os.listdir(_records(isolated_home)[0].parent) == [_records(isolated_home)[0].name]


def test_no_record_is_kept_or_read_when_the_state_directory_lies_in_an_allowed_root(
    workspace: Path, isolated_home: Path
) -> None:
    # The attack: with --allow-path covering the state directory's parent, a command renames that parent (the
    # box hides the state directory by name, and the mask moves with it) and plants a record: the next start
    # would show the model planted tool descriptions. No record is used where a command could write one.
    script = "mcp-server-file-read"
    client = RawClient(
        [console_script(script), "--allow-path", str(isolated_home), "--audit-log", str(workspace.parent / "a.jsonl")],
        workspace,
    )
    try:
        client.initialize()
        assert client.request(2, "tools/list")["result"]["tools"]
    finally:
        client.close()
    assert _records(isolated_home) == []


def test_a_reused_id_or_a_line_the_transport_refuses_gets_no_second_answer(
    workspace: Path, isolated_home: Path
) -> None:
    # A client that reuses an answered id before the real server takes over (the protocol forbids it), or sends a
    # line the transport refuses (NaN is not JSON): every answer it gets is its request's own, exactly once.
    script = "mcp-server-file-read"
    (workspace / "a.txt").write_text("hello\n")
    _session(script, workspace)
    reused = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "file_read", "arguments": {"path": "a.txt"}},
    }
    out = _session(script, workspace, [reused, {"jsonrpc": "2.0", "id": 9, "method": "ping"}], answers={3: 2})
    threes = [m for m in out if m.get("id") == 3]
    assert len(threes) == 2 and {"content" in m["result"] for m in threes} == {True, False}, out
    assert [m["id"] for m in out if m.get("id") != 3] == [1, 2, 9]
    client = RawClient([console_script(script), "--audit-log", str(workspace.parent / "audit.jsonl")], workspace)
    try:
        client.send_raw(
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}).encode()
            + b'\n{"jsonrpc":"2.0","id":10,"method":"ping","params":{"a":NaN}}\n'
            + b'{"jsonrpc":"2.0","id":11,"method":"ping"}\n'
        )
        seen = client.until(11, timeout=60)
    finally:
        client.close()
    assert [(m.get("id"), "error" in m) for m in seen] == [(1, False), (None, True), (11, False)], seen


def test_a_huge_line_after_the_answered_handshake_is_the_real_servers_and_answered_once(
    workspace: Path, isolated_home: Path
) -> None:
    # The front reads no further than a line it would not answer: a 300 KiB request is left in the pipe for the
    # real transport, which answers it once (and the front never buffers without bound).
    script = "mcp-server-file-read"
    (workspace / "a.txt").write_text("hello\n")
    _session(script, workspace)
    huge = {
        "jsonrpc": "2.0",
        "id": 4,
        "method": "tools/call",
        "params": {"name": "file_read", "arguments": {"path": "a.txt", "pad": "x" * (300 << 10)}},
    }
    out = _session(script, workspace, [huge, {"jsonrpc": "2.0", "id": 5, "method": "ping"}], answers={4: 1})
    assert sorted(m["id"] for m in out) == [1, 2, 3, 4, 5], [m.get("id") for m in out]


# Modules that only the SDK's HTTP/SSE transports and OAuth routes load (a stand-in is never their submodule).
_WEB_MODULES = ("starlette.concurrency", "starlette._utils", "uvicorn.config", "sse_starlette.sse", "httpx2._client")


@pytest.mark.parametrize(("script", "modern"), [("mcp-server-shell-exec", False), ("mcp-server-file-read", True)])
def test_a_served_session_loads_neither_rich_nor_the_web_transports(
    script: str, modern: bool, workspace: Path, tmp_path: Path
) -> None:
    """A stdio server never uses the SDK's web transports (~8.5 MiB and ~200 ms a start) nor the rich handler its
    logging set-up builds and ours replaces (~6 MiB): through a whole session (either era, a real call), neither
    is loaded."""
    (workspace / "a.txt").write_text("hello\n")
    err = tmp_path / "stderr.txt"
    argv = [sys.executable, "-X", "importtime", console_script(script), "--log-level", "debug"]
    client = RawClient(argv, workspace, stderr=err, modern=modern)
    try:
        client.initialize()
        assert client.request(1, "tools/list")["result"]["tools"]
        call = {"name": "shell_exec", "arguments": {"command": "cat a.txt"}}
        if script == "mcp-server-file-read":
            call = {"name": "file_read", "arguments": {"path": "a.txt"}}
        result = client.request(2, "tools/call", call)["result"]
        assert not result.get("isError"), result
        assert "hello" in json.dumps(result)
        # A line only the SDK answers (the front may have answered the rest of a 2025-era session alone).
        assert client.request(3, "resources/list")["result"]["resources"] == []
        client.end_input()
    finally:
        client.close()
    loaded = client.imported()
    assert "mcp.server.mcpserver.server" in loaded  # the server was built (the SDK's MCPServer loaded)
    assert "rich" not in loaded  # any module of rich loads the package first (a refused import is listed alone)
    assert not loaded & set(_WEB_MODULES), sorted(loaded & set(_WEB_MODULES))
    assert not [line for line in client.stderr_lines() if "the deferred" in line]  # no real use loaded one either
