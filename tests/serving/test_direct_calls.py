"""Calls the connection hands straight to the server (no SDK dispatcher): same answers, same guards.

A ``tools/call`` of a tool that needs nothing from the session (file_read, file_write) skips the SDK's
dispatcher once the 2025-era handshake is done; everything else (a ``_meta``, a progress token, roots still to
fetch, the 2026-07-28 era, shell_exec's questions) takes the SDK's way.
"""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, InitializeRequestParams, TextContent

from mcp_server_guard.serving.stdio import StdioConnection
from support import ERROR_META_KEY, RawClient, console_script

VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]


def _initialize(raw: RawClient, version: str, capabilities: dict[str, Any] | None = None) -> None:
    client = {"name": "t", "version": "1"}
    params = {"protocolVersion": version, "capabilities": capabilities or {}, "clientInfo": client}
    answer = raw.request(0, "initialize", params)
    assert answer["result"]["protocolVersion"] == version, answer
    raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    # A request the start-up front leaves to the real server: the calls that follow are the connection's (the
    # front answers a first call before the SDK loads: tests/serving/test_early_calls.py).
    assert raw.request(-1, "resources/list", {})["result"] == {"resources": []}


def _without_audit_id(answer: dict[str, Any]) -> str:
    text = re.sub(r"(auditId\W+)[0-9a-f]{12}", r"\1X", json.dumps(answer, sort_keys=True))
    return re.sub(r"\d{8}T\d{12}Z-[0-9a-f]{6}", "BACKUP", text)  # file_write's backup ids


CALLS = [
    ("mcp-server-file-read", "file_read", {"path": "hello.txt"}),  # a result
    ("mcp-server-file-read", "file_read", {"path": "nope.txt"}),  # a refusal with a suggestion
    ("mcp-server-file-read", "file_read", {"path": "hello.txt", "lines": 3}),  # a PARAM error with an example
    # The bytes the file holds: both ways alike (nothing to write; a write that changed it would differ the 2nd time).
    ("mcp-server-file-write", "file_write", {"path": "hello.txt", "content": "hello\nworld\n", "overwrite": True}),
]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_call_taken_directly_gets_the_answer_the_sdk_way_gives(workspace: Path, tmp_path: Path, version: str) -> None:
    # One server per script takes all of its calls, each under its own id: first directly, then the same call
    # with a _meta (here empty), which sends it the SDK's way.
    for script in dict.fromkeys(script for script, _, _ in CALLS):
        stderr = tmp_path / f"{script}.log"
        argv = [console_script(script), "--audit-log", str(tmp_path / "audit.jsonl"), "--log-level", "DEBUG"]
        raw = RawClient(argv, workspace, stderr=stderr)
        answers = []
        try:
            _initialize(raw, version)
            for rid, (tool, arguments) in enumerate(((t, a) for s, t, a in CALLS if s == script), start=1):
                direct = raw.request(rid, "tools/call", {"name": tool, "arguments": arguments})
                sdk_way = raw.request(rid, "tools/call", {"name": tool, "arguments": arguments, "_meta": {}})
                answers.append((rid, direct, sdk_way))
        finally:
            raw.close()
        taken = re.findall(r"tools/call (\d+) \(.*\) taken directly", stderr.read_text())
        assert taken == [str(rid) for rid, _, _ in answers], taken  # each first call went directly, no second did
        for rid, direct, sdk_way in answers:
            assert _without_audit_id(direct) == _without_audit_id(sdk_way), (script, rid)
            assert "auditId" in json.dumps(direct)


def test_roots_list_changed_reaches_the_very_next_direct_call(workspace: Path, tmp_path: Path) -> None:
    # The attack: the client narrows its roots and calls at once, in one write; a call answered directly from
    # the roots fetched before the notification would read through the old, wider jail.
    (workspace / "sub" / "keep.txt").write_text("keep\n")
    raw = RawClient([console_script("mcp-server-file-read")], workspace, stderr=tmp_path / "stderr.log")
    call = {"name": "file_read", "arguments": {"path": str(workspace / "hello.txt")}}
    try:
        _initialize(raw, "2025-11-25", {"roots": {"listChanged": True}})
        raw.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})
        ask = raw.recv()
        assert ask.get("method") == "roots/list", ask
        raw.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"roots": [{"uri": workspace.as_uri()}]}})
        first = raw.until(1)[-1]
        assert first["result"].get("isError") is not True, first
        # Roots known: the same call now goes directly, without asking.
        assert raw.request(2, "tools/call", call)["result"].get("isError") is not True
        changed = {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}
        request = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call}
        raw.send_raw((json.dumps(changed) + "\n" + json.dumps(request) + "\n").encode())
        ask = raw.recv()
        assert ask.get("method") == "roots/list", f"the call was answered on the old roots: {ask}"
        narrowed = {"roots": [{"uri": (workspace / "sub").as_uri()}]}
        raw.send({"jsonrpc": "2.0", "id": ask["id"], "result": narrowed})
        third = raw.until(3)[-1]
        assert third["result"]["isError"] is True
        assert third["result"]["_meta"][ERROR_META_KEY]["code"] == "PATH_OUTSIDE_JAIL", third
    finally:
        raw.close()


class _Blocked:
    """A server whose one tool waits until cancelled."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.cancelled = anyio.Event()

    def takes_directly(self, name: str, client: InitializeRequestParams) -> bool:
        return name == "wait"

    async def call_directly(self, name: str, arguments: dict[str, Any], client: InitializeRequestParams) -> Any:
        self.started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.cancelled.set()
            raise
        return CallToolResult(content=[TextContent(type="text", text="never")])

    def roots_changed(self) -> None:
        return None


@pytest.mark.anyio
async def test_a_cancelled_direct_call_is_stopped_and_never_answered() -> None:
    to_server_r, to_server_w = os.pipe()
    from_server_r, from_server_w = os.pipe()
    server = _Blocked()
    connection = StdioConnection(to_server_r, from_server_w, direct=server)
    lowlevel = MCPServer("t")._lowlevel_server
    lines: list[dict[str, Any]] = []

    def read_answers() -> None:
        with os.fdopen(from_server_r, "rb") as out:
            lines.extend(json.loads(line) for line in out)

    reader = threading.Thread(target=read_answers, daemon=True)
    reader.start()

    def send(message: dict[str, Any]) -> None:
        os.write(to_server_w, json.dumps(message).encode() + b"\n")

    async def run_server(read: Any, write: Any) -> None:
        await lowlevel.run(read, write, lowlevel.create_initialization_options())

    async with anyio.create_task_group() as tg:
        tg.start_soon(connection.serve, run_server)
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        with anyio.fail_after(5):
            while not lines:
                await anyio.sleep(0.01)
        send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "wait", "arguments": {}}})
        with anyio.fail_after(5):
            await server.started.wait()
        send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
        with anyio.fail_after(5):
            await server.cancelled.wait()
        send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        with anyio.fail_after(5):
            while len(lines) < 2:
                await anyio.sleep(0.01)
        os.close(to_server_w)  # the client leaves: the connection ends
    reader.join(timeout=5)
    os.close(from_server_w)
    assert [m.get("id") for m in lines] == [0, 2], lines  # the cancelled call got no answer
