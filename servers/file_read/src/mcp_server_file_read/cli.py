"""Command line of mcp-server-file-read: the shared guard flags, then serve over stdio."""

from __future__ import annotations

from mcp_server_guard.serving import GuardedServer, ServerConfig, server_cli


@server_cli(prog="mcp-server-file-read", name="file_read")
def main(config: ServerConfig) -> GuardedServer:
    """Serve the file_read tool over stdio, confined to the launch directory and --allow-path dirs."""
    # Lazy for start-up time: --help and --version need neither the tool nor the MCP SDK.
    from mcp_server_file_read.server import build_server  # noqa: PLC0415

    return build_server(config)
