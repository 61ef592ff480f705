"""mcp-server-shell-exec: a guarded stdio MCP server publishing one tool, ``shell_exec``."""

# Before anything imports the MCP SDK: its client is never used by a server (a fifth of start-up time).
from mcp_server_guard._sdk import defer_sdk_client

defer_sdk_client()

from mcp_server_shell_exec.cli import main  # noqa: E402
from mcp_server_shell_exec.server import ShellExecInput, ShellExecOutput, build_server  # noqa: E402

__all__ = ["ShellExecInput", "ShellExecOutput", "build_server", "main"]
