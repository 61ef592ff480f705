"""Append-only audit log kept outside the jail: a record of intent before a tool acts, and of its outcome.

Each call that acts writes two JSON lines sharing one ``audit_id``:

* ``"phase": "intent"`` — written *before* the tool acts: who asked (``actor``: the client's name and version),
  what (``action``, ``target``, summarized arguments), under which ``mode``, server, tool and pid.
  If it cannot be written (disk full, log unwritable), the call is refused with ``AUDIT_UNAVAILABLE``
  and nothing is done: no record, no action.
* ``"phase": "outcome"`` — written when the call ends: ``policy_result`` (allow, ask-approved, deny,
  ask-declined, ask-unavailable, error, cancelled), ``reason``, ``approved_by`` (``human:elicitation``, a
  ``rule:<id>``, or ``policy``), code, sizes, duration and the facts the tool noted.
  Failing to write it never turns a done action into a reported failure; it is
  logged as one line on stderr instead.

A call refused before it acts (bad arguments, a denied command) has an outcome line only; an intent
without an outcome is a call its server never finished (it died, or is still running). Argument values
that carry file contents (and anything long) are replaced by their SHA-256 and length, so the log
records what happened without copying the data it happened to.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import hashlib
import json
import logging
import os
import secrets
import stat
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp_server_guard.errors import HostError
from mcp_server_guard.paths import private_dirs, real_within_any, state_dir

log = logging.getLogger("mcp_server_guard.audit")
# Arguments whose values are data, not names: always hashed.
CONTENT_KEYS = frozenset({"content", "stdin"})
# Arguments whose values are secrets or may be: only their keys are logged.
REDACTED_KEYS = frozenset({"env"})
_INLINE_LIMIT = 256
# Every policy result an outcome line may carry (``mcp-guard audit --decision`` takes these).
POLICY_RESULTS = ("allow", "ask-approved", "approved-session", "ask-declined", "ask-unavailable", "deny", "error",
                  "cancelled", "input_required")  # fmt: skip


def state_dirs() -> list[Path]:
    """Where the servers keep their state by default: ``$XDG_STATE_HOME/mcp-guard``, or, when that lies inside
    the jail, a per-user temp dir. Both are hidden from every tool of every server (``protected``), wherever
    they lie: the audit log and the history store must never be reachable through the tools they record."""
    return [state_dir(), Path(tempfile.gettempdir()) / f"mcp-guard-{os.getuid()}"]


def default_state_path(leaf: str, jail_roots: Iterable[str]) -> Path:
    """``<state dir>/<leaf>``: the first of ``state_dirs()`` outside the jail (made, or checked to be ours)."""
    roots = list(jail_roots)
    for directory in state_dirs():
        if not real_within_any(directory, roots):
            return own_dir(directory) / leaf
    raise OSError(f"every default location for {leaf} lies inside the allowed directories; pass it explicitly")


def own_dir(directory: Path) -> Path:
    """``directory``, made private (0700) when missing; raises OSError when it is not a directory of this user
    that only this user can write (or is a symlink).

    Threat: another user of the machine making ``/tmp/mcp-guard-<uid>`` first, to plant a history that
    `mcp-guard undo` acts on, or to read and rewrite the audit log."""
    with contextlib.suppress(FileExistsError):
        private_dirs(directory)
    if not is_own_dir(directory):
        raise OSError(errno.EPERM, f"{directory} is not a private directory of this user; remove it or pass a path")
    return directory


def is_own_dir(directory: Path) -> bool:
    try:
        st = os.lstat(directory)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022


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


def new_audit_id() -> str:
    """A short id, unique in practice, that pairs a call's intent and outcome lines."""
    return secrets.token_hex(6)


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
    summaries: dict[str, Any] = field(default_factory=dict)  # argument summaries, computed once
    audit_id: str = field(default_factory=new_audit_id)
    intent_written: bool = False
    actor: str | None = None  # the client's name/version, from initialize (or the 2026-07-28 request envelope)
    mode: str | None = None
    action: str | None = None  # read, write, exec
    target: str | None = None  # the path or the command line
    reason: str | None = None
    approved_by: str | None = None
    # Which project: the launch directory (the base of relative paths in arguments and targets) and the roots.
    launch_dir: str | None = None
    roots: list[str] | None = None

    def summarized_arguments(self) -> dict[str, Any]:
        for key, value in self.arguments.items():
            if key not in self.summaries:
                self.summaries[key] = summarize_value(key, value)
        return {key: self.summaries[key] for key in self.arguments}

    def to_json(self, phase: str = "outcome") -> str:
        entry: dict[str, Any] = {
            "audit_id": self.audit_id,
            "phase": phase,
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "server": self.server,
            "tool": self.tool,
            "actor": self.actor,
            "mode": self.mode,
            "action": self.action,
            "target": _short_target(self.target),
            "arguments": self.summarized_arguments(),
        }
        if self.launch_dir is not None:
            entry["launch_dir"], entry["roots"] = self.launch_dir, self.roots
        if phase == "outcome":
            entry.update(
                policy_result=self.decision,
                reason=self.reason,
                approved_by=self.approved_by,
                code=self.code,
                bytes=self.bytes,
                durationMs=round((time.perf_counter() - self.started) * 1000, 3),
            )
        entry["pid"] = os.getpid()
        entry.update(self.extra)
        return json.dumps(entry, ensure_ascii=False, default=str)


def _short_target(target: str | None) -> str | None:
    if target is None or len(target) <= 4 * _INLINE_LIMIT:
        return target
    return target[: 4 * _INLINE_LIMIT] + f"… ({len(target)} chars)"


_current: contextvars.ContextVar[AuditRecord | None] = contextvars.ContextVar("mcp_guard_audit", default=None)


def current() -> AuditRecord | None:
    """The audit record of the call being served (None outside a call)."""
    return _current.get()


def note_content(key: str, sha256: str, size: int) -> None:
    """Record an argument's hash computed elsewhere, so a large content is not hashed twice."""
    record = _current.get()
    if record is not None:
        record.summaries[key] = {"sha256": sha256, "bytes": size}


def recorded_digest(key: str) -> tuple[str, int] | None:
    """The (sha256, bytes) the audit already computed for a content argument of the current call."""
    record = _current.get()
    summary = record.summaries.get(key) if record is not None else None
    if isinstance(summary, dict) and isinstance(summary.get("sha256"), str) and isinstance(summary.get("bytes"), int):
        return summary["sha256"], summary["bytes"]
    return None


def note(
    *,
    bytes: int | None = None,
    decision: str | None = None,
    reason: str | None = None,
    approved_by: str | None = None,
    **extra: Any,
) -> None:
    """Add facts to the audit record of the call being served (no-op outside a call)."""
    record = _current.get()
    if record is None:
        return
    if bytes is not None:
        record.bytes = bytes
    if decision is not None:
        record.decision = decision
    if reason is not None:
        record.reason = reason
    if approved_by is not None:
        record.approved_by = approved_by
    record.extra.update(extra)


class Recording:
    """Handle of an audited call in progress (see :meth:`AuditLog.call`)."""

    def __init__(self) -> None:
        self.discarded = False

    def discard(self) -> None:
        """The call has not acted and is not over (an input_required round): write no outcome for it."""
        self.discarded = True


class AuditLog:
    """The append-only log file, opened once; each record is a single O_APPEND write."""

    def __init__(self, path: Path) -> None:
        self.path = path
        private_dirs(path.parent)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        self._torn = False  # a record was cut short (disk full): start the next one on a fresh line

    @contextlib.contextmanager
    def call(self, record: AuditRecord) -> Iterator[Recording]:
        """The one begin/end of an audited call: ``record`` is the current call's inside the block (``note``
        and ``intent`` reach it); its outcome line is written when the block ends, however it ends.

        An exception leaves the block recorded as "cancelled" unless the caller set another decision first;
        ``Recording.discard()`` drops a round that has not acted (an input_required round) with no line.
        """
        token = _current.set(record)
        recording = Recording()
        try:
            yield recording
        except BaseException:
            if record.decision == "allow":
                record.decision = "cancelled"
            self._end(record, token)
            raise
        if recording.discarded:
            _current.reset(token)
        else:
            self._end(record, token)

    def intent(self) -> None:
        """Record what the call being served is about to do; refuse the call if that cannot be recorded.

        Call it right before the action; once per call (later calls are no-ops), no-op outside a call.
        """
        record = _current.get()
        if record is None or record.intent_written:
            return
        try:
            self._append(record.to_json("intent"))
        except OSError as exc:
            reason = exc.strerror or str(exc)
            log.error("audit: cannot record the intent of call %s (%s); the call is refused", record.audit_id, reason)
            raise HostError(
                "AUDIT_UNAVAILABLE",
                f"The audit log cannot record this call ({reason}), so it was not performed; nothing was done.",
                "Ask the user to free space where the server's audit log lives (--audit-log) or fix its permissions; "
                "calls are refused until it can be written.",
            ) from None
        record.intent_written = True

    def _end(self, record: AuditRecord, token: contextvars.Token[AuditRecord | None]) -> None:
        """Record how the call ended. Never raises: a lost outcome line is reported on stderr instead."""
        _current.reset(token)
        try:
            self._append(record.to_json("outcome"))
        except OSError as exc:
            code = f" {record.code}" if record.code else ""
            log.error(
                "audit: cannot record the outcome of call %s (%s: %s%s): %s",
                record.audit_id,
                record.tool,
                record.decision,
                code,
                exc.strerror or exc,
            )

    def _append(self, line: str) -> None:
        # A name that is not UTF-8 (a surrogate escape) becomes a \udcXX escape: the line stays UTF-8 and JSON.
        data = (line + "\n").encode("utf-8", "backslashreplace")
        if self._torn:
            data = b"\n" + data
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError:
            self._torn = self._torn or len(view) < len(data)
            raise
        self._torn = False

    def close(self) -> None:
        os.close(self._fd)


def read_records(path: Path, last: int) -> list[dict[str, Any]]:
    """The last ``last`` records (lines) of a log, oldest first; unreadable lines are skipped."""
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
        return []
    records: list[dict[str, Any]] = []
    for line in reversed(lines):
        if len(records) >= last:
            break
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    records.reverse()
    return records


FOLLOW_POLL_S = 0.25


def follow_entries(path: Path, poll: float = FOLLOW_POLL_S, start: int | None = None) -> Iterator[dict[str, Any]]:
    """Calls as they end (each call's intent and outcome merged, as ``read_entries`` gives them), from the end of
    the log on (or from byte ``start``: where a listing just before began to read); waits for more until
    interrupted. A log rotated or truncated is followed from its start again."""
    pending: dict[str, dict[str, Any]] = {}
    where = _size(path) if start is None else start
    buffer = b""
    while True:
        size = _size(path)
        if size < where:
            where, buffer = 0, b""  # truncated or replaced
        if size > where:
            with path.open("rb") as fh:
                fh.seek(where)
                buffer += fh.read(size - where)
            where = size
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(record, dict):
                    continue
                audit_id = record.get("audit_id")
                if not isinstance(audit_id, str):
                    yield {**record, "status": "done"}
                    continue
                phase = record.pop("phase", "outcome")
                call = pending.setdefault(audit_id, {"status": "unfinished"})
                if "time" in call:
                    record.pop("time", None)
                call.update(record)
                if phase != "intent":
                    call["status"] = "done"
                    yield pending.pop(audit_id)
                while len(pending) > 10_000:  # intents whose outcome never came (servers that died)
                    del pending[next(iter(pending))]
        time.sleep(poll)


def log_size(path: Path) -> int:
    """The log's size now (0 when there is none): where ``follow_entries`` starts."""
    return _size(path)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def pid_alive(pid: object) -> bool:
    """Whether a process with this pid exists now (another user's counts)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def read_entries(path: Path, last: int) -> Iterator[dict[str, Any]]:
    """The last ``last`` calls of a log, oldest first: each call's intent and outcome merged into one entry.

    Each entry gets a ``status``: ``done`` (an outcome was recorded), ``running`` (intent only, its server
    is alive) or ``interrupted`` (intent only, its server is gone: it died mid-call). Records without an
    ``audit_id`` (older logs) are calls of their own.
    """
    calls: dict[str, dict[str, Any]] = {}
    order: list[dict[str, Any]] = []
    # An intent and its outcome may be far apart (a long command): read generously, show ``last`` calls.
    for record in read_records(path, 2 * last + 64):
        audit_id = record.get("audit_id")
        if not isinstance(audit_id, str):
            order.append({**record, "status": "done"})
            continue
        call = calls.get(audit_id)
        if call is None:
            call = calls[audit_id] = {"status": "unfinished"}
            order.append(call)
        phase = record.pop("phase", "outcome")
        if "time" in call:
            record.pop("time", None)  # a call is shown at the time it started
        call.update(record)
        if phase != "intent":
            call["status"] = "done"
    for call in order:
        if call["status"] == "unfinished":
            call["status"] = "running" if pid_alive(call.get("pid")) else "interrupted"
    yield from order[-last:]
