"""mcp-server-shell-exec: a guarded stdio MCP server publishing one tool, ``shell_exec``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mcp_server_guard import lazy_exports

if TYPE_CHECKING:
    from mcp_server_shell_exec.server import ShellExecInput, ShellExecOutput, build_server, build_tools


def main(argv: Sequence[str] | None = None) -> None:
    """The console script: the first answers go out while the rest loads (``serving.front``)."""
    from mcp_server_guard.serving import run_console  # noqa: PLC0415 - nothing heavy before it

    run_console(__name__, argv)


__getattr__ = lazy_exports(
    __name__,
    {"ShellExecInput": "server", "ShellExecOutput": "server", "build_server": "server", "build_tools": "server"},
)

__all__ = ["ShellExecInput", "ShellExecOutput", "build_server", "build_tools", "main"]
