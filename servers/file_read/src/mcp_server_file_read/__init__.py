"""mcp-server-file-read: a guarded stdio MCP server publishing one tool, ``file_read``."""

from mcp_server_file_read.cli import main
from mcp_server_file_read.server import FileReadInput, FileReadOutput, build_server

__all__ = ["FileReadInput", "FileReadOutput", "build_server", "main"]
