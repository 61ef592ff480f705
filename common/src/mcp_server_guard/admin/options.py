"""The shared options ``mcp-guard`` takes, as typer reads them (``serving.launch`` declares them without typer: a
server reads its everyday command line without it, ``serving.options``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_server_guard.serving import launch
from mcp_server_guard.serving.options import as_typer

if TYPE_CHECKING:
    from mcp_server_guard.serving.launch import AllowPathOpt, AuditLogOpt, HistoryDirOpt, PolicyOpt
else:
    AllowPathOpt = as_typer(launch.AllowPathOpt)
    AuditLogOpt = as_typer(launch.AuditLogOpt)
    HistoryDirOpt = as_typer(launch.HistoryDirOpt)
    PolicyOpt = as_typer(launch.PolicyOpt)

__all__ = ["AllowPathOpt", "AuditLogOpt", "HistoryDirOpt", "PolicyOpt"]
