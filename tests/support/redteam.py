"""Shared helpers for the red-team tests (tests/redteam41): real servers over JSON-RPC lines, bounded waits."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from support import RawClient, console_script

FW = "mcp-server-file-write"
SX = "mcp-server-shell-exec"


def started(
    server: str, root: Path, state: Path, *extra: str, env: dict[str, str] | None = None, history: Path | None = None
) -> RawClient:
    state.mkdir(parents=True, exist_ok=True)
    args = [console_script(server), "--allow-path", str(root), "--audit-log", str(state / "audit.jsonl"),
            "--history-dir", str(history or state / "history"), *extra]  # fmt: skip
    raw = RawClient(args, root, env={**os.environ, **(env or {})}, stderr=state / f"{server}.err")
    raw.initialize()
    return raw


def call(raw: RawClient, id_: int, tool: str, arguments: dict[str, Any], timeout: float = 60) -> dict[str, Any]:
    raw.send({"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
    while True:
        message = raw.recv(timeout=timeout)
        if message.get("id") == id_ and "method" not in message:
            assert "result" in message, message
            return dict(message["result"])


def mcp_guard(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([console_script("mcp-guard"), *args], capture_output=True, text=True, timeout=timeout,
                          check=False)  # fmt: skip


def audit_id_of(result: dict[str, Any]) -> str:
    structured = result.get("structuredContent") or {}
    found = structured.get("auditId") or structured.get("audit_id")
    if found:
        return str(found)
    text = json.dumps(result)
    import re

    match = re.search(r"mcp-guard undo ([0-9a-f]{12})", text)
    assert match, f"no audit id in {text[:2000]}"
    return match.group(1)


def disk_used(directory: Path, *, dirs: bool = False) -> int:
    """Bytes the files below ``directory`` take on disk (``dirs``: the directories below it too); 0 if it is not."""
    total = 0
    for dirpath, subdirs, files in os.walk(directory):
        for name in [*files, *(subdirs if dirs else [])]:
            st = os.lstat(os.path.join(dirpath, name))
            total += max(st.st_size, st.st_blocks * 512)
    return total
