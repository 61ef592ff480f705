"""The server scaffold every guarded server shares: the MCP server with its audit and roots, the shared command
line, the stdio transport.

What it guarantees: every request with an id gets an answer (a line that is no valid request earns a JSON-RPC
error, never silence); the end of stdin or a stop signal ends the process within seconds (``deadline``); the schemas
a client sees are flat, one JSON type per property.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_server_guard._lazy import lazy_exports

if TYPE_CHECKING:
    from mcp_server_guard.serving.config import Mode, ServerConfig
    from mcp_server_guard.serving.front import run_console
    from mcp_server_guard.serving.launch import (
        STOP_SIGNALS,
        HistoryDirOpt,
        build_config,
        resolve_history_dir,
        run_app,
        server_cli,
        state_hidden,
        state_in_use,
        usage_error,
    )
    from mcp_server_guard.serving.options import option
    from mcp_server_guard.serving.server import ClientRoots, GuardedServer
    from mcp_server_guard.serving.stdio import MAX_MESSAGE_BYTES, serve_stdio
    from mcp_server_guard.serving.tools import ResourceSpec, ToolInput, ToolOutput, Tools, ToolSpec, command_target

_EXPORTS = {
    "run_console": "front",
    "option": "options",
    "command_target": "tools",
    "Mode": "config",
    "ClientRoots": "server",
    "GuardedServer": "server",
    "HistoryDirOpt": "launch",
    "MAX_MESSAGE_BYTES": "stdio",
    "STOP_SIGNALS": "launch",
    "ServerConfig": "config",
    "ToolInput": "tools",
    "ToolOutput": "tools",
    "Tools": "tools",
    "ToolSpec": "tools",
    "ResourceSpec": "tools",
    "build_config": "launch",
    "resolve_history_dir": "launch",
    "state_hidden": "launch",
    "state_in_use": "launch",
    "run_app": "launch",
    "serve_stdio": "stdio",
    "server_cli": "launch",
    "usage_error": "launch",
}
__getattr__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "MAX_MESSAGE_BYTES",
    "STOP_SIGNALS",
    "ClientRoots",
    "GuardedServer",
    "HistoryDirOpt",
    "Mode",
    "ResourceSpec",
    "ServerConfig",
    "ToolInput",
    "ToolOutput",
    "ToolSpec",
    "Tools",
    "build_config",
    "command_target",
    "option",
    "resolve_history_dir",
    "run_app",
    "run_console",
    "serve_stdio",
    "server_cli",
    "state_hidden",
    "state_in_use",
    "usage_error",
]
