"""Floor for the benchmark: the mcp SDK's stdio transport alone, without a session or a server.

`mcp.server.stdio.stdio_server()` reads stdin exactly as every SDK server does (a TextIOWrapper read
line by line on a worker thread, each line validated by `jsonrpc_message_adapter.validate_json`);
this loop answers each request straight on the transport's write stream, like raw_server.py does.
The difference to raw_server.py is the SDK's stdin read + parse; the difference to bare_server.py's
`size` tool is the SDK's session, dispatch and tool-argument validation.
"""

from typing import Any

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        async for item in read_stream:
            if isinstance(item, Exception) or not isinstance(item.message, types.JSONRPCRequest):
                continue
            req = item.message
            params = req.params or {}
            if req.method == "initialize":
                result: dict[str, Any] = {
                    "protocolVersion": params.get("protocolVersion"),
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "transport", "version": "0"},
                }
            else:
                args = params.get("arguments") or {}
                n = len(args.get("text", args.get("content", "")))
                result = {"content": [{"type": "text", "text": str(n)}], "structuredContent": {"result": n}}
            await write_stream.send(SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=req.id, result=result)))


if __name__ == "__main__":
    anyio.run(main)
