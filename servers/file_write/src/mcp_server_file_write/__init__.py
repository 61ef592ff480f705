"""mcp-server-file-write: a guarded stdio MCP server publishing one tool, ``file_write``."""

from mcp_server_file_write.cli import main
from mcp_server_file_write.server import FileWriteInput, FileWriteOutput, build_server

__all__ = ["FileWriteInput", "FileWriteOutput", "build_server", "main"]
