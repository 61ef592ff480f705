"""Floor for the benchmark: a bare mcp-SDK stdio server with trivial tools and nothing else."""

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("bare")


@mcp.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@mcp.tool()
def size(text: str) -> int:
    """Return the length of the text (a big request with a tiny response)."""
    return len(text)


if __name__ == "__main__":
    mcp.run("stdio")
