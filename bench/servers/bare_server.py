"""Floor for the benchmark: a bare mcp-SDK stdio server with trivial tools and nothing else."""

import anyio
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


@mcp.tool()
def blob(n: int) -> str:
    """Return n bytes of 'x' (a tiny request with a big response: the text appears in content and structuredContent)."""
    return "x" * n


@mcp.tool()
async def sleep(seconds: float) -> float:
    """Sleep without blocking the event loop (how many calls the SDK runs at once)."""
    await anyio.sleep(seconds)
    return seconds


if __name__ == "__main__":
    mcp.run("stdio")
