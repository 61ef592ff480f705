"""mcp-server-guard: the guards shared by the guarded stdio MCP servers.

Layout: ``errors``, ``audit``, ``policy`` (the policy file loader) and ``paths`` at the top, used by all;
``serving`` (the server scaffold every server shares), ``files`` (path jail, MIME, reading, writing,
history), ``shell`` (parser, rules, processes, execution, approval; ``shell.sandbox``: the kernel
sandbox) and ``admin`` (the ``mcp-guard`` CLI). The names below are what a server author needs most.

What it guarantees: stdout belongs to the protocol alone (logs go to stderr); every refusal is a ``GuardError`` with
a code, a category, a message and a suggestion; text from a command, a path or a model that reaches a person has its
control and bidi characters escaped (``paths.printable``); libc is loaded in one module (``linux``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_server_guard._lazy import lazy_exports
from mcp_server_guard.paths import escape_log_records

if TYPE_CHECKING:
    from mcp_server_guard.audit import AuditLog, AuditRecord, note, recorded_digest
    from mcp_server_guard.errors import (
        ERROR_CODES,
        ERROR_META_KEY,
        Category,
        ErrorPayload,
        ExecutionError,
        GuardError,
        HostError,
        ParamError,
        ResourceError,
        SecurityError,
    )
    from mcp_server_guard.files.jail import Jail, Located, SymlinkMode
    from mcp_server_guard.paths import printable, state_dir, within, within_any
    from mcp_server_guard.policy import NetworkRules, Policy, PolicyError, load_policy
    from mcp_server_guard.protected import Protection, protection_for
    from mcp_server_guard.serving.config import ServerConfig
    from mcp_server_guard.serving.server import GuardedServer
    from mcp_server_guard.serving.tools import ToolInput, ToolOutput

# Exported names resolve on first use: importing the package (the in-box supervisor does, with no
# site-packages at all) must not import the MCP SDK and pydantic.
_EXPORTS = {
    "state_dir": "paths",
    "printable": "paths",
    "Protection": "protected",
    "protection_for": "protected",
    "recorded_digest": "audit",
    "AuditLog": "audit",
    "AuditRecord": "audit",
    "Category": "errors",
    "ERROR_CODES": "errors",
    "ERROR_META_KEY": "errors",
    "ErrorPayload": "errors",
    "ExecutionError": "errors",
    "GuardError": "errors",
    "GuardedServer": "serving.server",
    "Jail": "files.jail",
    "Located": "files.jail",
    "ParamError": "errors",
    "NetworkRules": "policy",
    "Policy": "policy",
    "PolicyError": "policy",
    "ResourceError": "errors",
    "SecurityError": "errors",
    "ServerConfig": "serving.config",
    "SymlinkMode": "files.jail",
    "HostError": "errors",
    "ToolInput": "serving.tools",
    "ToolOutput": "serving.tools",
    "load_policy": "policy",
    "note": "audit",
    "within": "paths",
    "within_any": "paths",
}
__getattr__ = lazy_exports(__name__, _EXPORTS)

escape_log_records()  # (paths.escape_log_records: no log line of ours writes a command's control characters raw)

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
    "HostError",
    "Jail",
    "Located",
    "NetworkRules",
    "ParamError",
    "Policy",
    "PolicyError",
    "Protection",
    "ResourceError",
    "SecurityError",
    "ServerConfig",
    "SymlinkMode",
    "ToolInput",
    "ToolOutput",
    "lazy_exports",
    "load_policy",
    "note",
    "printable",
    "protection_for",
    "recorded_digest",
    "state_dir",
    "within",
    "within_any",
]
