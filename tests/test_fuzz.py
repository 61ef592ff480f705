"""A small, seeded fuzzer: malformed JSON-RPC lines and random arguments never kill a server or lose a call.

Every request gets exactly one well-formed answer (a result or a JSON-RPC error), and a valid call still
works afterwards.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from conftest import RawClient, console_script

SERVERS = {
    "mcp-server-file-read": ("file_read", ["path", "offset", "limit"], []),
    "mcp-server-file-write": ("file_write", ["path", "content", "overwrite", "expectedSha256", "createDirs"], []),
    # Only the read-only allow-list runs, so random lines cannot do anything but look.
    "mcp-server-shell-exec": (
        "shell_exec",
        ["command", "args", "cwd", "stdin", "env", "timeoutSeconds", "maxOutputBytes"],
        ["--policy", "readonly"],
    ),
}


def random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 2 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 1, 2**31, 2**63, -(2**63), 7])
    if kind == 3:
        return rng.choice([0.5, -1e308, 1e308, 3.0])
    if kind in (4, 5):
        alphabet = "ab./\\\x00\n~$*{}[]'\"é😀 -" + "\udcff"[:0]
        return "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
    if kind == 6:
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(["a", "path", "x"]): random_value(rng, depth + 1) for _ in range(rng.randrange(3))}


def malformed_lines(rng: random.Random) -> list[bytes]:
    return [
        b"not json at all",
        b"{",
        b"[]",
        b"null",
        b'{"jsonrpc": "2.0"}',
        b'{"jsonrpc": "1.0", "id": 1, "method": "tools/call"}',
        bytes(rng.randrange(256) for _ in range(64)).replace(b"\n", b" "),
        b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 999}}',
        json.dumps({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": 5}}).encode(),
    ]


@pytest.mark.parametrize("script", sorted(SERVERS))
def test_random_arguments_and_malformed_lines_never_kill_the_server(script: str, workspace: Path) -> None:
    tool, fields, extra = SERVERS[script]
    rng = random.Random(f"{script}-20261121")
    raw = RawClient([console_script(script), "--audit-log", str(workspace.parent / "fuzz.jsonl"), *extra], workspace)
    try:
        raw.initialize()
        for line in malformed_lines(rng):
            raw.send_raw(line + b"\n")
        for id_ in range(1, 151):
            arguments: Any
            if rng.random() < 0.1:
                arguments = random_value(rng)  # not even an object
            else:
                arguments = {name: random_value(rng) for name in rng.sample(fields, rng.randrange(len(fields) + 1))}
                if rng.random() < 0.2:
                    arguments[rng.choice(["bogus", "__proto__", ""])] = random_value(rng)
            params: dict[str, Any] = {"name": tool if rng.random() < 0.9 else "nope", "arguments": arguments}
            if script.endswith("shell-exec") and isinstance(arguments, dict):
                arguments["timeoutSeconds"] = 2
            answer = raw.request(id_, "tools/call", params)
            assert answer["jsonrpc"] == "2.0" and ("result" in answer or "error" in answer), answer
            if "result" in answer and answer["result"].get("isError"):
                assert answer["result"]["_meta"]["mcp-guard/error"]["code"]
        probe = {
            "file_read": {"path": "hello.txt"},
            "file_write": {"path": "fuzz-ok.txt", "content": "ok"},
            "shell_exec": {"command": "cat hello.txt"},
        }[tool]
        final = raw.request(999, "tools/call", {"name": tool, "arguments": probe})
        assert final["result"]["isError"] is False, final
    finally:
        raw.close()
    assert raw.proc.returncode == 0  # it ended because stdin closed, not because it crashed
