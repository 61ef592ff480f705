"""Under ``--network deny`` a command that tries the network is told there is none, and why (issue 43: ``npm
install`` once ran to its timeout in silence with ``networkDenied: []``): the result's ``networkDenied`` holds one
entry (host ``*``, rule ``network-deny``) and its text says so; a command that never tried gets nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support import serve, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

LOOKUP = "python3 -c \"import socket; socket.create_connection(('192.0.2.1', 443), timeout=5)\""
WAITS = 'python3 -c "import time; time.sleep(30)"'


async def test_a_command_that_tries_the_network_under_network_deny_is_told_there_is_none(workspace: Path) -> None:
    async with serve("mcp-server-shell-exec", workspace, "--network", "deny") as client:
        tried = await client.call_tool("shell_exec", {"command": LOOKUP, "timeoutSeconds": 30})
        waited = await client.call_tool("shell_exec", {"command": WAITS, "timeoutSeconds": 1})
        plain = await client.call_tool("shell_exec", {"command": "echo hi"})
    for result in (tried, waited):
        out = result.structured_content
        assert out is not None and [d["rule"] for d in out["networkDenied"]] == ["network-deny"], out
        assert "--network deny" in out["networkDenied"][0]["reason"]
        assert "[no network:" in text_of(result) and "[network].allow" not in text_of(result)
    assert plain.structured_content is not None and plain.structured_content["networkDenied"] == []


async def test_under_network_deny_each_command_has_a_loopback_of_its_own(workspace: Path) -> None:
    """README and docs/shell_exec.md: `--network deny` leaves no network at all but a loopback of the command's own."""
    serve_and_connect = (
        "python3 -c \"import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); "
        "c = socket.create_connection(s.getsockname(), timeout=5); print('loopback works')\""
    )
    async with serve("mcp-server-shell-exec", workspace, "--network", "deny") as client:
        result = await client.call_tool("shell_exec", {"command": serve_and_connect, "timeoutSeconds": 30})
    assert result.structured_content is not None and "loopback works" in result.structured_content["stdout"], result
