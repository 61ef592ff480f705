"""A server's configuration: the permission mode and what the shared flags decide (``launch.build_config``).

No MCP SDK here: the ``mcp-guard`` CLI validates configurations with it and starts without importing the SDK.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from mcp_server_guard.audit import AuditLog
from mcp_server_guard.files.jail import Jail
from mcp_server_guard.policy import Policy


class Mode(enum.StrEnum):
    """The permission mode a server runs in, chosen per session by the agent CLI (``--mode``)."""

    READ_ONLY = "read-only"  # file_write refuses everything; shell_exec: a read-only view (no box: allow-list)
    WORKSPACE_WRITE = "workspace-write"  # the defaults: write inside the jail, kernel box around commands
    FULL_ACCESS = "full-access"  # no kernel box around commands; the policy's deny rules still apply


@dataclass
class ServerConfig:
    """Everything a guarded server needs, built by the CLI from flags and the policy file."""

    name: str
    version: str
    jail: Jail
    policy: Policy
    audit: AuditLog
    log_level: str = "WARNING"
    mode: Mode = Mode.WORKSPACE_WRITE
    # --mode read-only took the packaged read-only allow-list because no --policy was given (a box may then judge
    # lines as a workspace-write session would, on a read-only view); an explicit --policy readonly is kept.
    implicit_readonly: bool = False


__all__ = ["Mode", "ServerConfig"]
