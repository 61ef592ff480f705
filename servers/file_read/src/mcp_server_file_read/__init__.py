"""mcp-server-file-read: a guarded stdio MCP server publishing one tool, ``file_read``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mcp_server_guard._lazy import lazy_exports

if TYPE_CHECKING:
    from mcp_server_file_read.server import FileReadInput, FileReadOutput, build_server


def main(argv: Sequence[str] | None = None) -> None:
    """The console script: the first answers go out while the rest loads (``serving.front``)."""
    from mcp_server_guard.serving.front import start_front  # noqa: PLC0415 - nothing heavy before it

    start_front("mcp_server_file_read", None if argv is None else list(argv))
    # Before anything imports the MCP SDK: its client is never used by a server (a fifth of start-up time).
    from mcp_server_guard._sdk import defer_sdk_client  # noqa: PLC0415

    defer_sdk_client()
    from mcp_server_file_read.cli import main as cli_main  # noqa: PLC0415

    cli_main(argv)


__getattr__ = lazy_exports(__name__, {"FileReadInput": "server", "FileReadOutput": "server", "build_server": "server"})

__all__ = ["FileReadInput", "FileReadOutput", "build_server", "main"]
