"""Apply journals written the way a server writes them (docs/shell_exec.md "Crash safety"): each line a JSON
object, a tab and its seal, an HMAC-SHA256 with the history's key over the seal before it, a newline and the line
(the first over the journal's file name). Written independently of ``changes.plan`` so that a test of a forged
journal can hold the key (the second wall: what a server checks in a journal that is sealed)."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

from mcp_server_guard.changes.journal import journal_key

__all__ = ["sealed", "write_sealed"]


def sealed(path: Path, key: bytes, lines: list[dict[str, Any]]) -> bytes:
    last = path.name.encode()
    out = b""
    for line in lines:
        payload = json.dumps(line, ensure_ascii=False).encode()
        last = hmac.new(key, last + b"\n" + payload, hashlib.sha256).hexdigest().encode()
        out += payload + b"\t" + last + b"\n"
    return out


def write_sealed(history_dir: Path, audit_id: str, lines: list[dict[str, Any]]) -> Path:
    """``.journal/apply-<audit_id>.json`` in the history at ``history_dir``, holding ``lines`` (the plan first)."""
    path = history_dir / ".journal" / f"apply-{audit_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(sealed(path, journal_key(history_dir), lines))
    return path
