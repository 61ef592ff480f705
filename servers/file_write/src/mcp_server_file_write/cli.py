"""Command line of mcp-server-file-write: the shared guard flags plus --history-dir, then serve."""

from __future__ import annotations

from mcp_server_guard.serving import HistoryDirOpt, ServerConfig, Tools, resolve_history_dir, server_cli

PROG = "mcp-server-file-write"


@server_cli(prog=PROG, name="file_write")
def main(config: ServerConfig, history_dir: HistoryDirOpt = None) -> Tools:
    """Serve the file_write tool over stdio, confined to the launch directory and --allow-path dirs."""
    # Lazy for start-up time: --help and --version need neither the tool nor the MCP SDK (nor does the tool).
    from mcp_server_file_write.server import build_tools  # noqa: PLC0415

    return build_tools(config, resolve_history_dir(PROG, history_dir, config))
