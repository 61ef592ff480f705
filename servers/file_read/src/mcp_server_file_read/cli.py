"""Command line of mcp-server-file-read: the shared guard flags, then serve over stdio."""

from __future__ import annotations

from mcp_server_guard.serving import ServerConfig, Tools, server_cli


@server_cli(prog="mcp-server-file-read", name="file_read")
def main(config: ServerConfig) -> Tools:
    """Serve the file_read tool over stdio, confined to the launch directory and --allow-path dirs."""
    # Lazy for start-up time: --help and --version need neither the tool nor the MCP SDK (nor does the tool).
    from mcp_server_file_read.server import build_tools  # noqa: PLC0415

    return build_tools(config)
