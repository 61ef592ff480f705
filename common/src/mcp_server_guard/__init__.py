"""mcp-server-guard: the guards shared by the guarded stdio MCP servers.

Path jail (openat2 / O_NOFOLLOW walk), symlink policy, file-type and MIME checks, TOML policies,
the audit log, the structured error tree, and the serving layer that publishes one tool per server.
"""

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
