"""Append-only audit log: one JSON line per tool call, kept outside the jail.

Argument values that carry file contents (and anything long) are replaced by their SHA-256 and
length, so the log records what happened without copying the data it happened to.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# Arguments whose values are data, not names: always hashed.
CONTENT_KEYS = frozenset({"content", "stdin"})
# Arguments whose values are secrets or may be: only their keys are logged.
REDACTED_KEYS = frozenset({"env"})
_INLINE_LIMIT = 256


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "mcp-guard"


def _inside(path: Path, roots: Iterable[str]) -> bool:
    real = os.path.realpath(path)
    return any(real == r or real.startswith(r.rstrip("/") + "/") for r in roots)


def default_state_path(leaf: str, jail_roots: Iterable[str]) -> Path:
    """``$XDG_STATE_HOME/mcp-guard/<leaf>``, or a per-user temp dir when that lies inside the jail.

    The audit log and the history store must never be reachable through the tools they record.
    """
    roots = list(jail_roots)
    candidates = [state_dir(), Path(tempfile.gettempdir()) / f"mcp-guard-{os.getuid()}"]
    for directory in candidates:
        if not _inside(directory, roots):
            return directory / leaf
    raise OSError(f"every default location for {leaf} lies inside the allowed directories; pass it explicitly")


def default_audit_path(jail_roots: Iterable[str]) -> Path:
    return default_state_path("audit.jsonl", jail_roots)


def summarize_value(key: str, value: Any) -> Any:
    """What the log keeps of one argument value."""
    if key in REDACTED_KEYS and isinstance(value, Mapping):
        return {"keys": sorted(str(k) for k in value)}
    if isinstance(value, str) and (key in CONTENT_KEYS or len(value) > _INLINE_LIMIT):
        data = value.encode("utf-8", "surrogatepass")
        return {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    if isinstance(value, list) and sum(len(str(v)) for v in value) > _INLINE_LIMIT:
        data = json.dumps(value).encode()
        return {"sha256": hashlib.sha256(data).hexdigest(), "items": len(value)}
    return value


@dataclass
class AuditRecord:
    """One call's entry; tool code adds to it through :func:`note`."""

    server: str
    tool: str
    arguments: dict[str, Any]
    started: float = field(default_factory=time.perf_counter)
    decision: str = "allow"
    code: str | None = None
    bytes: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    summaries: dict[str, Any] = field(default_factory=dict)  # precomputed argument summaries

    def to_json(self) -> str:
        entry: dict[str, Any] = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "server": self.server,
            "tool": self.tool,
            "arguments": {k: self.summaries.get(k) or summarize_value(k, v) for k, v in self.arguments.items()},
            "decision": self.decision,
            "code": self.code,
            "bytes": self.bytes,
            "durationMs": round((time.perf_counter() - self.started) * 1000, 3),
            "pid": os.getpid(),
        }
        entry.update(self.extra)
        return json.dumps(entry, ensure_ascii=False, default=str)


_current: contextvars.ContextVar[AuditRecord | None] = contextvars.ContextVar("mcp_guard_audit", default=None)


def note_content(key: str, sha256: str, size: int) -> None:
    """Record an argument's hash computed elsewhere, so a large content is not hashed twice."""
    record = _current.get()
    if record is not None:
        record.summaries[key] = {"sha256": sha256, "bytes": size}


def note(*, bytes: int | None = None, decision: str | None = None, **extra: Any) -> None:
    """Add facts to the audit record of the call being served (no-op outside a call)."""
    record = _current.get()
    if record is None:
        return
    if bytes is not None:
        record.bytes = bytes
    if decision is not None:
        record.decision = decision
    record.extra.update(extra)


class AuditLog:
    """The append-only log file, opened once; each entry is a single O_APPEND write."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def begin(self, record: AuditRecord) -> contextvars.Token[AuditRecord | None]:
        return _current.set(record)

    def end(self, record: AuditRecord, token: contextvars.Token[AuditRecord | None]) -> None:
        _current.reset(token)
        os.write(self._fd, (record.to_json() + "\n").encode("utf-8", "surrogatepass"))

    def reset(self, token: contextvars.Token[AuditRecord | None]) -> None:
        """Drop the record of a call that is not over yet (an input_required round)."""
        _current.reset(token)

    def close(self) -> None:
        os.close(self._fd)


def read_entries(path: Path, last: int) -> Iterator[dict[str, Any]]:
    """The last ``last`` entries of a log, oldest first; unreadable lines are skipped."""
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            block = min(size, max(4096, last * 1024))
            while True:
                fh.seek(size - block)
                lines = fh.read(block).splitlines()
                if len(lines) > last + 8 or block == size:
                    break
                block = min(size, block * 4)
    except FileNotFoundError:
        return
    entries: list[dict[str, Any]] = []
    for line in reversed(lines):
        if len(entries) >= last:
            break
        try:
            entries.append(json.loads(line))
        except ValueError:
            continue
    yield from reversed(entries)
