"""mcp-server-guard: the guards shared by the guarded stdio MCP servers.

Path jail (openat2 / O_NOFOLLOW walk), symlink policy, file-type and MIME checks, TOML policies,
the audit log, the structured error tree, and the serving layer that publishes one tool per server.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp_server_guard.audit import AuditLog, AuditRecord, note
    from mcp_server_guard.errors import (
        ERROR_CODES,
        ERROR_META_KEY,
        Category,
        ErrorPayload,
        ExecutionError,
        GuardError,
        ParamError,
        ResourceError,
        SecurityError,
        SystemError_,
    )
    from mcp_server_guard.jail import Jail, Located, SymlinkMode
    from mcp_server_guard.policy import Policy, PolicyError, load_policy
    from mcp_server_guard.tooling import GuardedServer, ServerConfig, ToolInput, ToolOutput, register_tool

# Exported names resolve on first use: importing the package (the in-box supervisor does, with no
# site-packages at all) must not import the MCP SDK and pydantic.
_EXPORTS = {
    "AuditLog": "audit", "AuditRecord": "audit", "note": "audit",
    "ERROR_CODES": "errors", "ERROR_META_KEY": "errors", "Category": "errors", "ErrorPayload": "errors",
    "ExecutionError": "errors", "GuardError": "errors", "ParamError": "errors", "ResourceError": "errors",
    "SecurityError": "errors", "SystemError_": "errors",
    "Jail": "jail", "Located": "jail", "SymlinkMode": "jail",
    "Policy": "policy", "PolicyError": "policy", "load_policy": "policy",
    "GuardedServer": "tooling", "ServerConfig": "tooling", "ToolInput": "tooling", "ToolOutput": "tooling",
    "register_tool": "tooling",
}  # fmt: skip


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mcp_server_guard' has no attribute {name!r}")
    return getattr(importlib.import_module(f"mcp_server_guard.{module}"), name)


__all__ = [
    "ERROR_CODES",
    "ERROR_META_KEY",
    "AuditLog",
    "AuditRecord",
    "Category",
    "ErrorPayload",
    "ExecutionError",
    "GuardError",
    "GuardedServer",
    "Jail",
    "Located",
    "ParamError",
    "Policy",
    "PolicyError",
    "ResourceError",
    "SecurityError",
    "ServerConfig",
    "SymlinkMode",
    "SystemError_",
    "ToolInput",
    "ToolOutput",
    "load_policy",
    "note",
    "register_tool",
]
