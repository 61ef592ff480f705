"""The server's own requests to the client (an elicitation) carry string ids of their own kind, ``mcp-guard-N``,
never a number a client's pending call may hold too (issue 43: the user's agent CLI pairs replies by id alone, and
our first elicitation had id 1, the same as its tools/call). docs/agent-cli.md says so."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support import RawClient, console_script

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")


def test_an_elicitation_has_a_string_id_and_its_answer_completes_the_call(workspace: Path) -> None:
    raw = RawClient(
        [console_script("mcp-server-shell-exec"), "--audit-log", str(workspace.parent / "audit.jsonl")],
        workspace, env={**os.environ},
    )  # fmt: skip
    try:
        raw.request(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                                      "clientInfo": {"name": "agent-cli", "version": "0"}})  # fmt: skip
        raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        raw.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                  "params": {"name": "shell_exec", "arguments": {"command": "rm -r sub"}}})  # fmt: skip
        asked = raw.recv(timeout=60)
        assert asked.get("method") == "elicitation/create", asked
        assert isinstance(asked["id"], str) and asked["id"].startswith("mcp-guard-"), asked
        props = asked["params"]["requestedSchema"]["properties"]
        content = {k: True for k, p in props.items() if p.get("type") == "boolean"}
        raw.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": content}})
        while True:
            answer = raw.recv(timeout=60)
            if answer.get("id") == 1 and "method" not in answer:
                break
        assert answer["result"]["structuredContent"]["transaction"] == "applied", answer
        assert not (workspace / "sub").exists()
    finally:
        raw.close()
