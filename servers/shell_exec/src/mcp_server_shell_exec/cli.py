"""Command line of mcp-server-shell-exec: the shared guard flags, then serve over stdio."""

from __future__ import annotations

from mcp_server_guard.cli import server_cli
from mcp_server_guard.tooling import GuardedServer, ServerConfig


@server_cli(prog="mcp-server-shell-exec", name="shell_exec")
def main(config: ServerConfig) -> GuardedServer:
    """Serve the shell_exec tool over stdio: every command is checked against the policy and runs in the jail."""
    from mcp_server_shell_exec.server import build_server

    return build_server(config)
