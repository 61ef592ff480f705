"""The first start in a new project answers ``initialize`` and ``tools/list`` before the SDK loads (issue 44).

With no record of an earlier start, a server that hands its tools to the start-up front computes those answers
from them (``Tools.initialize_result``, ``Tools.tools_list_result``). Here: for every handshake revision and a
spread of client params, a computed answer is the SDK's own (or none: the SDK judges those params itself); through
the real console scripts, the front computes them (no record, or a state directory inside a root, where records
are never read) and the real server, which still sees the handshake and compares, finds no difference.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from mcp.server.runner import ServerRunner
from mcp.types import ListToolsResult
from mcp_types import methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError

from mcp_server_guard.serving import tools as serving_tools
from mcp_server_guard.serving.config import Mode
from mcp_server_guard.serving.server import GuardedServer
from mcp_server_guard.serving.tools import Tools
from support import RawClient, console_script
from support.memory import file_tools

INFO = {"name": "computed-test", "version": "1"}
CAPABILITIES_SDK_JUDGES: list[dict[str, Any]] = [
    {"sampling": {"context": 5}}, {"sampling": {"tools": 5}}, {"sampling": {"x": 1}}, {"elicitation": {"form": 5}},
    {"elicitation": {"url": "x"}}, {"elicitation": {"x": 1}}, {"tasks": {"requests": 5}}, {"tasks": {"list": "x"}},
    {"experimental": {"a": 5}}, {"experimental": {"a": {"b": 1}}}, {"roots": {"listChanged": True, "x": 1}},
    {"roots": {"x": 5}}, {"roots": {"listChanged": 1}}, {"elicitation": {"form": {}, "url": {}}},
    {"elicitation": {"form": {}}}, {"elicitation": {"url": {}}}, {"elicitation": {"form": {"x": 1}}},
    {"elicitation": {"form": {}, "url": {}, "x": {}}},
]  # fmt: skip
NEWER_CAPABILITIES: list[dict[str, Any]] = [
    {"elicitation": {}}, {"tasks": {}}, {"elicitation": {"form": {}}}, {"elicitation": {"form": {}, "url": {}}},
]  # fmt: skip
PARAMS: list[dict[str, Any]] = [
    *({"protocolVersion": v, "capabilities": {}, "clientInfo": INFO} for v in HANDSHAKE_PROTOCOL_VERSIONS),
    {"protocolVersion": "2025-06-18", "capabilities": {"roots": {"listChanged": True}}, "clientInfo": INFO},
    {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}, "sampling": {}}, "clientInfo": INFO},
    {"protocolVersion": "2025-11-25", "capabilities": {"experimental": {}}, "clientInfo": {**INFO, "title": "T"}},
    # What the SDK must judge itself: another era, an unknown revision, members or types it may refuse.
    {"protocolVersion": "2026-07-28", "capabilities": {}, "clientInfo": INFO},
    {"protocolVersion": "2099-01-01", "capabilities": {}, "clientInfo": INFO},
    {"protocolVersion": 20250618, "capabilities": {}, "clientInfo": INFO},
    {"protocolVersion": "2025-06-18", "capabilities": {"roots": {"listChanged": "yes"}}, "clientInfo": INFO},
    {"protocolVersion": "2025-06-18", "capabilities": {"roots": True}, "clientInfo": INFO},
    {"protocolVersion": "2025-06-18", "capabilities": [], "clientInfo": INFO},
    {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c"}},
    {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": 1}},
    {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {**INFO, "icons": []}},
    {"protocolVersion": "2025-06-18", "capabilities": {}},
    {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": INFO, "_meta": {"progressToken": 1}},
    {"capabilities": {}, "clientInfo": INFO},
    # Red team 42o: members and types the SDK validates (the front must leave them to it, or answer as it does).
    *({"protocolVersion": "2025-11-25", "capabilities": caps, "clientInfo": INFO} for caps in CAPABILITIES_SDK_JUDGES),
    *(
        {"protocolVersion": version, "capabilities": caps, "clientInfo": INFO}
        for version in ("2024-11-05", "2025-03-26")
        for caps in NEWER_CAPABILITIES
    ),
    *(
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": info}
        for info in (
            {**INFO, "websiteUrl": "not a url"},
            {**INFO, "websiteUrl": ""},
            {**INFO, "title": ""},
            {"name": "", "version": ""},
            {**INFO, "description": "\u202e"},
        )
    ),
]


def _tools(name: str, root: Path, mode: Mode) -> Tools:
    return file_tools(name, root, allow=(root.parent / "other",), mode=mode)


def _sdk_initialize(server: GuardedServer, params: dict[str, Any]) -> dict[str, Any] | None:
    """The SDK's own wire answer to ``initialize`` (its validation, negotiation, result and per-revision sieve),
    None when it refuses the params."""
    runner = ServerRunner(server._lowlevel_server, None, None)  # type: ignore[arg-type]
    try:
        methods.validate_client_request("initialize", str(params.get("protocolVersion")), params)
        result = runner._handle_initialize(params)
    except (ValidationError, ValueError, KeyError, TypeError):
        return None
    return runner._serialize("initialize", result.protocol_version, result)


def _sdk_tools_list(server: GuardedServer, version: str) -> dict[str, Any]:
    """The SDK's own wire answer to ``tools/list`` on a connection of ``version``."""
    runner = ServerRunner(server._lowlevel_server, None, None)  # type: ignore[arg-type]
    return runner._serialize("tools/list", version, ListToolsResult(tools=asyncio.run(server.list_tools())))


@pytest.mark.parametrize("mode", [Mode.WORKSPACE_WRITE, Mode.FULL_ACCESS, Mode.READ_ONLY])
@pytest.mark.parametrize("name", ["file_read", "file_write"])
def test_a_computed_handshake_is_the_sdks_own_answer_or_none(
    name: str, mode: Mode, tmp_path: Path, isolated_home: Path
) -> None:
    root, other = tmp_path / "proj", tmp_path / "other"
    root.mkdir()
    other.mkdir()
    tools = _tools(name, root, mode)
    server = GuardedServer.serving(tools)
    computed_any = 0
    for params in PARAMS:
        computed = tools.initialize_result(params)
        if computed is not None:
            computed_any += 1
            assert computed == _sdk_initialize(server, params), params
    assert computed_any == len(HANDSHAKE_PROTOCOL_VERSIONS) + 6  # every plain handshake is computed
    for version in HANDSHAKE_PROTOCOL_VERSIONS:
        assert tools.tools_list_result() == _sdk_tools_list(server, version), version


def test_the_revisions_answered_are_the_sdks_handshake_revisions() -> None:
    assert serving_tools.HANDSHAKE_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS


# A request the front leaves to the real server: the SDK loads, sees the handshake and compares its own answers.
SDK_LINE: dict[str, Any] = {"jsonrpc": "2.0", "id": 4, "method": "resources/list"}


def _first_start(
    script: str, workspace: Path, stderr: Path, extra: list[str], tail: tuple[dict[str, Any], ...] = (SDK_LINE,)
) -> list[dict[str, Any]]:
    argv = [console_script(script), "--log-level", "DEBUG", "--launch-dir", str(workspace), *extra]
    client = RawClient(argv, workspace.parent, stderr=stderr)
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": INFO}
    lines: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
        *tail,
    ]
    try:
        client.send_raw(b"".join(json.dumps(m).encode() + b"\n" for m in lines))
        seen: list[dict[str, Any]] = []
        asked = {m["id"] for m in lines if "id" in m}
        while not asked <= {m.get("id") for m in seen if "method" not in m}:  # every answer, in any order
            seen.append(client.recv(timeout=60))
        assert client.proc.stdin is not None
        client.proc.stdin.close()
        rest = client.read_to_eof(timeout=60)
    finally:
        client.close()
    return seen + [json.loads(line) for line in rest.splitlines()]


@pytest.mark.parametrize("script", ["mcp-server-file-read", "mcp-server-file-write", "mcp-server-shell-exec"])
def test_the_first_start_in_a_new_project_computes_its_handshake_and_the_real_server_agrees(
    script: str, workspace: Path, isolated_home: Path, tmp_path: Path
) -> None:
    stderr = tmp_path / "first.log"
    first = _first_start(script, workspace, stderr, [])
    log = stderr.read_text(encoding="utf-8")
    assert "initialize answered from the server's tools (no record)" in log
    assert "tools/list answered from the server's tools (no record)" in log
    assert "differed" not in log
    assert [m["id"] for m in first] == [1, 2, 3, 4]  # one answer per request
    # The next start answers from the record the first one kept: the same answers.
    again = _first_start(script, workspace, tmp_path / "again.log", [])
    assert "no record" not in (tmp_path / "again.log").read_text(encoding="utf-8")
    assert [m["result"] for m in again] == [m["result"] for m in first]


def test_a_state_directory_inside_a_root_still_gets_a_computed_handshake_and_no_record(
    workspace: Path, isolated_home: Path, tmp_path: Path
) -> None:
    # The state directory lies in an allowed root (HOME is one): records are never read or kept there, yet the
    # computed answers come from the code, not from a file a command could plant.
    stderr = tmp_path / "home.log"
    answers = _first_start("mcp-server-file-read", workspace, stderr, ["--allow-path", str(isolated_home)])
    log = stderr.read_text(encoding="utf-8")
    assert "initialize answered from the server's tools (no record)" in log
    assert "differed" not in log
    assert [m["id"] for m in answers] == [1, 2, 3, 4]
    assert not list((isolated_home / ".local" / "state" / "mcp-guard" / "front").glob("*.json"))


@pytest.mark.parametrize("script", ["mcp-server-file-read", "mcp-server-file-write", "mcp-server-shell-exec"])
def test_a_session_the_front_answers_whole_never_loads_the_sdk(
    script: str, workspace: Path, isolated_home: Path, tmp_path: Path
) -> None:
    # Issue 44: what a call does not need is not loaded (an idle file server holds half the memory without it;
    # shell_exec's calls run on its event loop from the start, its box included).
    (workspace / "hello.txt").write_text("hi\n", encoding="utf-8")
    name, arguments = {
        "mcp-server-file-read": ("file_read", {"path": "hello.txt"}),
        "mcp-server-file-write": ("file_write", {"path": "n.txt", "content": "n"}),
        "mcp-server-shell-exec": ("shell_exec", {"command": "printf n > n.txt"}),
    }[script]
    call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    stderr = tmp_path / "alone.log"
    answers = _first_start(script, workspace, stderr, [], (call,))
    assert sorted(m["id"] for m in answers) == [1, 2, 3, 5] and len(answers) == 4
    assert answers[3]["result"]["isError"] is False, answers[3]
    log = stderr.read_text(encoding="utf-8")
    assert "the front answered the whole session; the SDK was never loaded" in log
    # Its computed answers were kept all the same: the next start answers them at once, from the record.
    assert len(list((isolated_home / ".local" / "state" / "mcp-guard" / "front").glob("*.json"))) == 1
    # The next line the front does not answer loads it, and the real server takes over.
    (workspace / "n.txt").unlink(missing_ok=True)
    answers = _first_start(script, workspace, tmp_path / "then.log", [], (call, SDK_LINE))
    by_id = {m["id"]: m for m in answers}
    assert sorted(by_id) == [1, 2, 3, 4, 5] and len(answers) == 5
    assert by_id[4]["result"] == {"resources": []} and by_id[5]["result"]["isError"] is False
    then = (tmp_path / "then.log").read_text(encoding="utf-8")
    assert "never loaded" not in then and "no record" not in then and "differed" not in then
