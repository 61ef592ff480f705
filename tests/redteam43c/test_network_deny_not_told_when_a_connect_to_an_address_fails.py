"""README: "`deny`: no network at all (each command has a loopback of its own); a command that tries is told so in
`networkDenied`." tools/shell_results.py ``_NETWORK_FAILURES`` matches "could not connect to server", but curl and
git (libcurl) say "Couldn't connect to server" when a connection to an address cannot be made: a command that tried
the network by address gets ``networkDenied: []`` and no word of --network deny (only a name that fails to resolve
is told).

What runs: curl and git towards 192.0.2.1 (TEST-NET-1, unroutable) inside the server's box, which has no network at
all; nothing is reached and nothing is written."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from support import serve

pytestmark = pytest.mark.anyio
SX = "mcp-server-shell-exec"


@pytest.mark.parametrize(
    "command",
    ["curl -sS --connect-timeout 3 http://192.0.2.1/", "git ls-remote http://192.0.2.1/x.git"],
    ids=["curl", "git"],
)
async def test_a_connect_by_address_under_network_deny_is_not_told(workspace: Path, command: str) -> None:
    """Expected: a networkDenied entry (host ``*``, rule ``network-deny``). Observed: stderr "Failed to connect to
    192.0.2.1 port 80 after 0 ms: Couldn't connect to server", networkDenied []."""
    async with serve(SX, workspace, "--network", "deny") as client:
        with anyio.fail_after(60):
            result = await client.call_tool("shell_exec", {"command": command, "timeoutSeconds": 20})
    out = dict(result.structured_content)
    assert out["exitCode"] != 0, out
    assert [(d["host"], d["rule"]) for d in out["networkDenied"]] == [("*", "network-deny")], (
        out["stderr"], out["networkDenied"],
    )  # fmt: skip
