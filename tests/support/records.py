"""The start-up front's records as a test reads and rewrites them: sealed with the user's key (``registry.user_key``,
the same registry as the servers the test starts: ``$MCP_GUARD_RUNTIME_DIR``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcp_server_guard import registry
from mcp_server_guard.serving.front_records import _RECORD, _seal, sealed_as


def read_record(path: Path) -> dict[str, Any]:
    """A record's answers (its seal line skipped)."""
    _seal_line, _, data = path.read_bytes().partition(b"\n")
    kept: dict[str, Any] = json.loads(data)
    return kept


def write_record(path: Path, records: dict[str, Any]) -> None:
    """``records`` written as a server keeps them: sealed with the user's key."""
    key = registry.user_key()
    assert key is not None
    data = json.dumps(records).encode()
    path.write_bytes(_seal(key, sealed_as(_RECORD, path), data) + b"\n" + data)
