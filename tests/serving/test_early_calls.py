"""A first call answered before the SDK has loaded (``serving.tools.early_call`` through ``serving.front``).

The front answers a start's first ``tools/call`` of a tool that needs nothing from the session with the server's
own tools, built without the SDK; the SDK loads after. Here: the answer is the one the SDK's way gives (the same
refusals, suggestions and facts, argument shape by argument shape), the call runs once (audited once, never
replayed to the real server), and the calls the front must not take (a client that declares roots) go the SDK's
way.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import select
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from mcp_server_guard.asking import NoSession
from mcp_server_guard.serving import front
from mcp_server_guard.serving import tools as serving_tools
from mcp_server_guard.serving.server import GuardedServer
from mcp_server_guard.serving.tools import Tools, early_call
from support import RawClient, console_script
from support.memory import file_tools

INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "early-test", "version": "1"}}
SAID = "answered before the SDK loaded"  # the front's debug line


def _tools(name: str, root: Path) -> Tools:
    return file_tools(name, root)


def _without_ids(result: dict[str, Any]) -> str:
    """A result with its audit id and history entry ids blanked (each call has its own)."""
    text = json.dumps(result, sort_keys=True, ensure_ascii=False)
    for audit_id in set(json_values(result, "auditId")):
        text = text.replace(audit_id, "<id>")
    return re.sub(r"\d{8}T\d{6,}Z-[0-9a-f]+", "<backup>", text)


def json_values(value: Any, key: str) -> list[str]:
    if isinstance(value, dict):
        found = [v for k, v in value.items() if k == key and isinstance(v, str)]
        return found + [x for v in value.values() for x in json_values(v, key)]
    if isinstance(value, list):
        return [x for v in value for x in json_values(v, key)]
    return []


READS: list[dict[str, Any]] = [
    {"path": "hello.txt"},
    {"path": "hello.txt", "offset": 2, "limit": 1},
    {"path": "hello.txt", "offset": "2"},
    {"path": "hello.txt", "offset": "x"},
    {"path": "hello.txt", "offset": 0},
    {"path": "hello.txt", "limit": 0},
    {"path": "hello.txt", "offset": 99},
    {"path": "hello.txt", "unknown": 1},
    {"path": "helo.txt"},
    {"path": "nope/deeper.txt"},
    {"path": "sub"},
    {"path": "../outside.txt"},
    {"path": "/etc/passwd"},
    {"path": "blob.bin"},
    {"path": 5},
    {"file_path": "hello.txt"},
    {},
    {"path": ""},
    {"path": "hello.txt", "offset": 1.5},
    {"path": "hello.txt", "offset": True},
]
WRITES: list[dict[str, Any]] = [
    {"path": "new.txt", "content": "x"},
    {"path": "hello.txt", "content": "y"},
    {"path": "hello.txt", "content": "y", "overwrite": True, "expectedSha256": "0" * 64},
    {"path": "hello.txt", "content": "y", "overwrite": "yes"},
    {"path": "hello.txt", "content": "y", "expectedSha256": "abc"},
    {"path": "a/b/c.txt", "content": "z"},
    {"path": "sub\\win.txt", "content": "z"},
    {"path": "../escape.txt", "content": "z"},
    {"path": "sub", "content": "z", "overwrite": True},
    {"path": "x.txt", "content": 5},
    {"path": "x.txt"},
    {"filePath": "y.txt", "content": "q"},
]


def _project(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "hello.txt").write_text("one\ntwo\nthree\n", encoding="utf-8")
    (root / "blob.bin").write_bytes(b"\x7fELF" + bytes(range(256)) * 8)
    (root / "sub").mkdir(exist_ok=True)
    (root / "sub" / "inner.txt").write_text("inner\n", encoding="utf-8")


@pytest.mark.parametrize(("tool", "calls"), [("file_read", READS), ("file_write", WRITES)])
def test_an_early_call_answers_as_the_sdks_way_does_for_every_argument_shape(
    tool: str, calls: list[dict[str, Any]], tmp_path: Path, isolated_home: Path
) -> None:
    # Two projects made alike, one served each way: the same call leaves the same answer (and the same tree).
    early_root, sdk_root = tmp_path / "a" / "project", tmp_path / "b" / "project"
    _project(early_root)
    _project(sdk_root)
    early_tools = _tools(tool, early_root)
    server = GuardedServer.serving(_tools(tool, sdk_root))

    async def both(arguments: dict[str, Any]) -> tuple[str, str]:
        early = await early_call(early_tools, tool, dict(arguments), "early-test/1", NoSession())
        sdk = await server.call_tool(tool, dict(arguments), actor="early-test/1", direct=True)
        wire = sdk.model_dump(mode="json", by_alias=True, exclude_none=True)
        wire.pop("resultType", None)  # a 2026-07-28 field: the 2025-era wire (the front's only one) never has it
        return _without_ids(early).replace(str(early_root), "<root>"), _without_ids(wire).replace(
            str(sdk_root), "<root>"
        )

    try:
        for arguments in calls:
            early, sdk = asyncio.run(both(arguments))
            assert early == sdk, arguments
    finally:
        for tools in (early_tools, server.tools):
            for cleanup in [*tools.kills, *tools.cleanups]:
                cleanup()
            tools.jail.close()
            tools.audit.close()


def _session(
    script: str, root: Path, lines: list[dict[str, Any]], last: int, *, also: tuple[int, ...] = ()
) -> tuple[list[dict[str, Any]], str]:
    """Spawn in ``root`` (log level DEBUG), send ``lines`` at once, wait for answer ``last`` (and those in ``also``:
    calls run at once may end in any order), close stdin: the answers, and what the server logged."""
    argv = [console_script(script), "--audit-log", str(root.parent / "audit.jsonl"), "--log-level", "DEBUG"]
    if script == "mcp-server-file-write":
        argv += ["--history-dir", str(root.parent / "history")]
    client = RawClient(argv, root, stderr=root.parent / "stderr.txt")
    try:
        client.send_raw(b"".join(json.dumps(m).encode() + b"\n" for m in lines))
        seen = client.until(last, timeout=60)
        for rid in also:
            if rid not in {m.get("id") for m in seen}:
                seen += client.until(rid, timeout=60)
        assert client.proc.stdin is not None
        client.proc.stdin.close()
        rest = client.read_to_eof(timeout=60)
        client.proc.wait(timeout=60)
    finally:
        client.close()
    return seen + [json.loads(line) for line in rest.splitlines()], "\n".join(client.stderr_lines())


def _opening(init: dict[str, Any] = INIT) -> list[dict[str, Any]]:
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]


def test_a_first_write_is_answered_before_the_sdk_loads_and_runs_once(workspace: Path, isolated_home: Path) -> None:
    script = "mcp-server-file-write"
    _session(script, workspace, _opening(), 2)  # the first start records its answers
    call = {"name": "file_write", "arguments": {"path": "once.txt", "content": "hello"}}
    lines = [*_opening(), {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call}]
    again = {**call, "arguments": {"path": "once.txt", "content": "again"}}
    lines.append({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": again})
    seen, logged = _session(script, workspace, lines, 4, also=(3,))
    assert f"tools/call of file_write {SAID}" in logged
    answers = {m["id"]: m for m in seen}
    assert sorted(answers) == [1, 2, 3, 4] and len(seen) == 4  # one answer per request
    # The two calls run at once (each on its own thread, as the SDK's way runs them): one made the file, the other
    # found it — each ran once (a replay would have found the file its own first run made).
    made = [rid for rid in (3, 4) if not answers[rid]["result"]["isError"]]
    assert len(made) == 1, answers
    other = 7 - made[0]
    assert "FILE_EXISTS" in answers[other]["result"]["content"][0]["text"]
    expected = "hello" if made == [3] else "again"
    assert (workspace / "once.txt").read_text(encoding="utf-8") == expected
    records = [json.loads(line) for line in (workspace.parent / "audit.jsonl").read_text().splitlines()]
    first_id = answers[made[0]]["result"]["structuredContent"]["auditId"]
    mine = [r for r in records if r.get("audit_id") == first_id]
    assert [r.get("phase") for r in mine] == ["intent", "outcome"]
    assert mine[0].get("actor") == "early-test/1"


def test_a_client_that_declares_roots_gets_its_first_call_from_the_real_server(
    workspace: Path, isolated_home: Path
) -> None:
    # Roots narrow the jail, and fetching them is a request to the client: the front never takes such a call.
    script = "mcp-server-file-read"
    init = {**INIT, "capabilities": {"roots": {"listChanged": True}}}
    _session(script, workspace, _opening(init), 2)
    (workspace / "r.txt").write_text("r\n", encoding="utf-8")
    call = {"name": "file_read", "arguments": {"path": "r.txt"}}
    argv = [console_script(script), "--audit-log", str(workspace.parent / "audit.jsonl"), "--log-level", "DEBUG"]
    client = RawClient(argv, workspace, stderr=workspace.parent / "stderr.txt")
    try:
        lines = [*_opening(init), {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call}]
        client.send_raw(b"".join(json.dumps(m).encode() + b"\n" for m in lines))
        request = client.recv(timeout=60)
        while "method" not in request:  # the real server asks for the roots before the call
            request = client.recv(timeout=60)
        assert request["method"] == "roots/list"
        root_uri = workspace.as_uri()
        client.send({"jsonrpc": "2.0", "id": request["id"], "result": {"roots": [{"uri": root_uri}]}})
        [answer] = client.until(3, timeout=60)[-1:]
        assert answer["result"]["structuredContent"]["content"] == "r\n"
    finally:
        client.close()
    assert SAID not in "\n".join(client.stderr_lines())


@pytest.mark.skipif(sys.platform != "linux", reason="Linux only")
def test_a_tool_that_asks_questions_runs_before_the_sdk_loads_on_the_servers_loop(
    workspace: Path, isolated_home: Path
) -> None:
    # shell_exec's gate may ask the human and its calls hold state on its event loop (the box, jobs): the front
    # hands its calls to that loop, which runs from the start (tests/serving/test_front_shell_calls.py: the rest).
    script = "mcp-server-shell-exec"
    _session(script, workspace, _opening(), 2)
    call = {"name": "shell_exec", "arguments": {"command": "echo hi"}}
    lines = [*_opening(), {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call}]
    seen, logged = _session(script, workspace, lines, 3)
    assert "tools/call of shell_exec taken on the server's loop" in logged
    assert seen[-1]["result"]["structuredContent"]["stdout"] == "hi\n"


def _early_session(root: Path, tail: list[dict[str, Any]], last: int) -> tuple[list[dict[str, Any]], str]:
    """A second start of file_write (the first one records its answers), with ``tail`` after the opening."""
    script = "mcp-server-file-write"
    _session(script, root, _opening(), 2)
    return _session(script, root, [*_opening(), *tail], last)


def test_attack_a_call_in_the_2026_envelope_on_a_handshake_connection_is_never_run_early(
    workspace: Path, isolated_home: Path
) -> None:
    # The real transport refuses such a request on this connection (-32600); the front must not run it first.
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    call = {"name": "file_write", "arguments": {"path": "x.txt", "content": "x"}, "_meta": meta}
    seen, logged = _early_session(workspace, [{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call}], 3)
    assert SAID not in logged and not (workspace / "x.txt").exists()
    assert seen[-1]["error"]["code"] == -32600


def test_attack_params_nested_deeper_than_the_transport_takes_are_never_run_early(
    workspace: Path, isolated_home: Path
) -> None:
    deep: Any = "x"
    for _ in range(300):
        deep = [deep]
    call = {"name": "file_write", "arguments": {"path": "x.txt", "content": "x"}, "_meta": {"progressToken": deep}}
    seen, logged = _early_session(workspace, [{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call}], 3)
    assert SAID not in logged and not (workspace / "x.txt").exists()
    assert seen[-1]["error"]["code"] == -32602


def test_attack_a_call_cancelled_in_the_same_write_is_left_to_the_real_server(
    workspace: Path, isolated_home: Path
) -> None:
    call = {"name": "file_write", "arguments": {"path": "x.txt", "content": "x" * 50_000}}
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}}
    ping = {"jsonrpc": "2.0", "id": 4, "method": "ping"}
    _, logged = _early_session(workspace, [{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call},
                                           cancel, ping], 4)  # fmt: skip
    assert SAID not in logged


def test_attack_a_client_that_closes_stdin_and_reads_nothing_does_not_keep_the_server_alive(
    workspace: Path, isolated_home: Path
) -> None:
    # An early answer larger than the pipe (a 300 KB read) blocks while the client reads nothing; its stdin EOF
    # must still end the process (as the real transport's does).
    import subprocess

    script = "mcp-server-file-read"
    _session(script, workspace, _opening(), 2)
    (workspace / "big.txt").write_text("line of text\n" * 25_000, encoding="utf-8")
    argv = [console_script(script), "--audit-log", str(workspace.parent / "audit.jsonl"), "--log-level", "DEBUG"]
    proc = subprocess.Popen(
        argv, cwd=workspace, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        call = {"name": "file_read", "arguments": {"path": "big.txt"}}
        lines = [*_opening(), {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call}]
        proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in lines))
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            raise AssertionError("stdin EOF did not end the server while its stdout was full") from None
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        proc.wait(timeout=30)


def _front_on_pipes(workspace: Path) -> tuple[front.Front, tuple[int, int, int, int]]:
    """file_read's start-up front, reading and writing pipes of the test's (its stdin's read end, the end the test
    writes, the end the test reads its answers from, its stdout's write end), with its tools."""
    wire_in, feed = os.pipe()
    answers, wire_out = os.pipe()
    running = front.Front("mcp_server_file_read", ["--launch-dir", str(workspace)], wire_in, wire_out).start()
    running.take_calls(_tools("file_read", workspace))
    return running, (wire_in, feed, answers, wire_out)


def _read_line(fd: int, timeout: float = 30.0) -> dict[str, Any]:
    """One line the front wrote on the pipe ``fd`` (bounded)."""
    data = b""
    while not data.endswith(b"\n"):
        ready, _, _ = select.select([fd], [], [], timeout)
        assert ready, f"no line from the front in {timeout} s (so far {data!r})"
        chunk = os.read(fd, 1)
        assert chunk, "the front's pipe ended"
        data += chunk
    answer: dict[str, Any] = json.loads(data)
    return answer


def test_a_stop_signal_while_the_front_serves_alone_answers_the_call_under_way_and_nothing_after(
    workspace: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As the real transport does: a call still running when the server is told to stop gets -32000, and its own
    # answer, when it comes, is never written after that.
    entered, release = threading.Event(), threading.Event()

    async def held_call(*_args: Any) -> dict[str, Any]:
        entered.set()
        release.wait(30)
        return {"content": [], "isError": False}

    monkeypatch.setattr(serving_tools, "early_call", held_call)
    running, (wire_in, feed, answers, wire_out) = _front_on_pipes(workspace)
    call = {"name": "file_read", "arguments": {"path": "hello.txt"}}
    lines = [*_opening(), {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": call}]
    os.write(feed, b"".join(json.dumps(m).encode() + b"\n" for m in lines))
    try:
        assert _read_line(answers)["id"] == 1 and _read_line(answers)["id"] == 2
        assert entered.wait(30), "the call never started"
        running.shutdown("Server shutting down (SIGTERM)")
        stopped = _read_line(answers)
        error = {"code": -32000, "message": "Server shutting down (SIGTERM)"}
        assert stopped == {"jsonrpc": "2.0", "id": 7, "error": error}
        release.set()
        os.close(feed)  # stdin's end: the front's thread ends once the call is done
        assert running.served_whole()
        os.close(wire_out)
        assert os.read(answers, 65536) == b""  # the call's own answer was never written
    finally:
        release.set()
        for fd in (wire_in, answers):
            os.close(fd)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_file_server_serving_alone_ends_on_a_stop_signal_with_its_exit_code(
    signum: signal.Signals, workspace: Path, isolated_home: Path
) -> None:
    argv = [console_script("mcp-server-file-read"), "--audit-log", str(workspace.parent / "audit.jsonl")]
    client = RawClient(argv, workspace, stderr=workspace.parent / "stderr.txt")
    try:
        client.initialize()
        answer = client.request(5, "tools/call", {"name": "file_read", "arguments": {"path": "nope.txt"}})
        assert answer["result"]["isError"] is True  # answered (by the front: nothing else loaded the SDK)
        client.proc.send_signal(signum)
        assert client.proc.wait(timeout=30) == 128 + signum
    finally:
        client.close()


@pytest.mark.parametrize("case", ["request", "cancel", "fifth call"])
def test_the_first_line_the_front_does_not_answer_and_every_line_after_it_go_to_the_real_server(
    case: str, workspace: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release, entered = threading.Event(), threading.Semaphore(0)

    async def held_call(*_args: Any) -> dict[str, Any]:
        entered.release()
        release.wait(30)
        return {"content": [], "isError": False}

    def call(rid: int) -> dict[str, Any]:
        params = {"name": "file_read", "arguments": {"path": "hello.txt"}}
        return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}

    monkeypatch.setattr(serving_tools, "early_call", held_call)
    taken = [call(10 + i) for i in range(4)]  # four at once: the most the front runs
    left = {
        "request": {"jsonrpc": "2.0", "id": 20, "method": "resources/list"},
        "cancel": {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 10}},
        "fifth call": call(14),
    }[case]
    after = {"jsonrpc": "2.0", "id": 21, "method": "ping"}
    running, (wire_in, feed, answers, wire_out) = _front_on_pipes(workspace)
    encoded = [json.dumps(m).encode() + b"\n" for m in [*_opening(), *taken, left, after]]
    os.write(feed, b"".join(encoded[:-2]))
    try:
        assert _read_line(answers)["id"] == 1 and _read_line(answers)["id"] == 2
        assert all(entered.acquire(timeout=30) for _ in taken)  # the four run (a cancel sent with them: not taken)
        os.write(feed, b"".join(encoded[-2:]))
        running.wait_for_sdk()  # it stopped answering: the SDK is wanted
        handed = running.hand_over()
        assert handed.data == encoded[0] + encoded[1] + encoded[2] + encoded[-2] + encoded[-1]
        assert [line for line, _, _ in handed.answered] == [encoded[0][:-1], encoded[2][:-1]]  # replayed handshake
        assert sorted(rid for rid, _ in handed.pending) == [10, 11, 12, 13]  # answered by the real transport
        assert not handed.eof
    finally:
        release.set()
        for fd in (wire_in, feed, answers, wire_out):
            os.close(fd)


def test_at_stdins_end_a_call_that_does_not_end_holds_the_front_only_for_its_grace(
    workspace: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Threat: a call stuck in a system call kept a server whose client had left alive for as long as it liked.
    release = threading.Event()

    async def stuck_call(*_args: Any) -> dict[str, Any]:
        release.wait(60)
        return {"content": [], "isError": False}

    monkeypatch.setattr(serving_tools, "early_call", stuck_call)
    monkeypatch.setattr(front, "_EOF_GRACE_S", 0.5)
    running, (wire_in, feed, answers, wire_out) = _front_on_pipes(workspace)
    call = {"name": "file_read", "arguments": {"path": "hello.txt"}}
    lines = [*_opening(), {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": call}]
    os.write(feed, b"".join(json.dumps(m).encode() + b"\n" for m in lines))
    try:
        assert _read_line(answers)["id"] == 1 and _read_line(answers)["id"] == 2
        os.close(feed)
        feed = -1
        assert running.served_whole()  # returns once the grace is over, the call still stuck
        assert not release.is_set()
    finally:
        release.set()
        for fd in (wire_in, feed, answers, wire_out):
            if fd >= 0:
                os.close(fd)
