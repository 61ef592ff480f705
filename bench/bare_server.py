"""Floor for the benchmark: a bare mcp-SDK stdio server with one trivial tool and nothing else."""

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("bare")


@mcp.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


if __name__ == "__main__":
    mcp.run("stdio")
