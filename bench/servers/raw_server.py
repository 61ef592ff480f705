"""Floor for the benchmark: a minimal JSON-lines 'server' with no SDK at all.

Reads stdin in 1 MiB chunks, splits lines itself, json.loads each line and answers every request with a
tiny result: `initialize` with a stub, anything else with the length of the `text`/`content` argument (as
the bare server's `size` tool does). Notifications are ignored. Exits on EOF.
"""

import json
import os
import sys


def answer(line: bytes) -> bytes | None:
    msg = json.loads(line)
    if "id" not in msg:
        return None
    if msg.get("method") == "initialize":
        result = {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw", "version": "0"},
        }
    else:
        args = msg.get("params", {}).get("arguments", {})
        n = len(args.get("text", args.get("content", "")))
        result = {"content": [{"type": "text", "text": str(n)}], "structuredContent": {"result": n}}
    return json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode() + b"\n"


def main() -> None:
    fd_in, fd_out = sys.stdin.fileno(), sys.stdout.fileno()
    pending = bytearray()
    while chunk := os.read(fd_in, 1 << 20):
        start = 0
        while (nl := chunk.find(b"\n", start)) >= 0:
            if pending:
                pending += chunk[start:nl]
                line = bytes(pending)
                pending.clear()
            else:
                line = chunk[start:nl]
            start = nl + 1
            if line.strip() and (reply := answer(line)) is not None:
                os.write(fd_out, reply)
        pending += chunk[start:]


if __name__ == "__main__":
    main()
