"""The operations behind the published tools that need more than one package: ``ShellService`` (shell_exec's
jobs, kept outputs, change sets and box, over ``shell``, ``changes`` and ``files``) and the results it builds.

What it guarantees: every shell_exec result carries the timeout, the policy decision and an audit id, and says what
the call changed (or held, or refused); what it changed is recorded for ``mcp-guard undo``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_server_guard._lazy import lazy_exports

if TYPE_CHECKING:
    from mcp_server_guard.tools.shell_results import (
        ChangedPath,
        Changes,
        JobInfo,
        NetworkDenial,
        OmittedRange,
        PendingChanges,
        ShellResult,
    )
    from mcp_server_guard.tools.shell_service import OUTPUT_DESCRIPTION, OUTPUT_TEMPLATE, ShellCall, ShellService

_EXPORTS = {
    "OUTPUT_TEMPLATE": "shell_service",
    "OUTPUT_DESCRIPTION": "shell_service",
    "ChangedPath": "shell_results",
    "Changes": "shell_results",
    "JobInfo": "shell_results",
    "NetworkDenial": "shell_results",
    "OmittedRange": "shell_results",
    "PendingChanges": "shell_results",
    "ShellResult": "shell_results",
    "ShellCall": "shell_service",
    "ShellService": "shell_service",
}
__getattr__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "OUTPUT_DESCRIPTION",
    "OUTPUT_TEMPLATE",
    "ChangedPath",
    "Changes",
    "JobInfo",
    "NetworkDenial",
    "OmittedRange",
    "PendingChanges",
    "ShellCall",
    "ShellResult",
    "ShellService",
]
