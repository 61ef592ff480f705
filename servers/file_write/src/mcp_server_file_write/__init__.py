"""mcp-server-file-write: a guarded stdio MCP server publishing one tool, ``file_write``."""

# Before anything imports the MCP SDK: its client is never used by a server (a fifth of start-up time).
from mcp_server_guard._sdk import defer_sdk_client

defer_sdk_client()

from mcp_server_file_write.cli import main  # noqa: E402
from mcp_server_file_write.server import FileWriteInput, FileWriteOutput, build_server  # noqa: E402

__all__ = ["FileWriteInput", "FileWriteOutput", "build_server", "main"]
