"""mcp-server-shell-exec: a guarded stdio MCP server publishing one tool, ``shell_exec``."""

from mcp_server_shell_exec.cli import main
from mcp_server_shell_exec.server import ShellExecInput, ShellExecOutput, build_server

__all__ = ["ShellExecInput", "ShellExecOutput", "build_server", "main"]
