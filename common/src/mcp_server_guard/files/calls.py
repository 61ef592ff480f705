"""The records of the calls that changed files: ``calls/<audit_id>.json`` in the history store, what
``mcp-guard undo`` plays backwards and ``mcp-guard history`` lists; and ``calls/evicted.jsonl``, the last calls whose
pre-images went to keep the store within its bounds (they cannot be undone any more, and are said so).

A record is written whole or not at all (a temp name, fsynced, renamed into place). Its bytes count in the
history's bounds (``files.history``). Every record is sealed (``seal``: an HMAC-SHA256 with the user's key, as the
apply journals are). One that does not check — not written by a server of this user, or sealed with another key
(the registry made anew, another ``MCP_GUARD_RUNTIME_DIR``, written before records were sealed) — is still kept,
counted and guarded like any other (what it keeps may be the only copy of someone's work), but `mcp-guard undo`
asks before playing it backwards and `mcp-guard history` says so (``unsealed``).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import stat
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp_server_guard import registry
from mcp_server_guard.files.kept import disk_usage, write_whole
from mcp_server_guard.files.planted import planted
from mcp_server_guard.paths import private_dirs

__all__ = [
    "CALLS",
    "EVICTED",
    "SEAL",
    "UNSEALED",
    "CallRecords",
    "HistoryError",
    "call_groups",
    "encoded_size",
    "needed_by_journals",
    "only_copies",
    "victims",
]

CALLS = "calls"  # the records' directory, in the history store
EVICTED = "evicted.jsonl"
AUDIT_ID = re.compile(r"^[0-9a-f]{12}$")
_EVICTED_KEPT = 200  # lines of evicted.jsonl kept ...
_EVICTED_BYTES = 8 << 10  # ... within this many bytes
_MAX_JOURNAL_PLAN = 16 << 20  # bytes of a journal's plan line read at most


class HistoryError(Exception):
    """A history entry or call record that cannot be served: ``code`` is HISTORY_NOT_FOUND or HISTORY_BROKEN."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def _encoded(value: Any) -> bytes:
    # A name that is not UTF-8 (a surrogate escape) becomes a \udcXX escape: still UTF-8, still JSON.
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "backslashreplace")


def encoded_size(text: str) -> int:
    """The bytes ``text`` takes in a record as written (a byte of a name that is not UTF-8 takes six, a control
    character six, a character beyond ASCII two to four): what a record's size is reckoned from beforehand."""
    return len(_encoded(text))


SEAL = "seal"  # a record's field: its HMAC (``_sealed``)
UNSEALED = ("not sealed by your servers' key (written before records were sealed, by a server given another "
            "MCP_GUARD_RUNTIME_DIR, or not by a server of yours)")  # fmt: skip


def _sealed(key: bytes, manifest: Mapping[str, Any]) -> str:
    body = json.dumps({k: v for k, v in manifest.items() if k != SEAL}, sort_keys=True, separators=(",", ":"))
    return hmac.new(key, b"mcp-guard call record\n" + body.encode(), hashlib.sha256).hexdigest()


class CallRecords:
    """The call records of one history store (``directory`` is its ``calls/``); ``grew`` hears of the bytes each
    record written takes."""

    def __init__(self, directory: Path, grew: Callable[[int], None] = lambda usage: None) -> None:
        self.directory = directory
        self._grew = grew
        self._key: bytes | None = None

    def key(self) -> bytes:
        """What seals the records: the user's key (``registry.sealing_key``), read once."""
        if self._key is None:
            self._key = registry.sealing_key(self.directory.parent)
        return self._key

    def landed(self) -> dict[str, tuple[int, ...]]:
        """Every cache marker a tool of ours landed (``files.planted``), as keys: of any server of the user, however
        long ago, whatever this history evicted (noted by the writers: ``Applier.apply``, file_write's record).

        Threat (red team 85 F3): a cache marker (``out/CACHEDIR.TAG``) one session's call landed made the user's
        ``out/`` a cache directory for the next session's server, whose memory of what it landed was empty: its
        ``rm -rf out`` went unasked. A path here only adds questions."""
        return planted().paths()

    def record(
        self,
        audit_id: str,
        roots: list[str],
        changes: list[dict[str, Any]],
        *,
        conflicts: list[list[str]] | None = None,
        durable: bool = True,
        what: Mapping[str, object] | None = None,
    ) -> dict[str, Any]:
        """The record of one call that changed files (see ``changes.plan.Applied.record`` for a change's fields);
        ``what``: the call (``changes.what.What``, as JSON), its fields written after the record's own."""
        manifest = {
            "audit_id": audit_id,
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "applied_ns": time.time_ns(),
            "roots": sorted(roots),
            **(what or {}),
            "changes": changes,
            "conflicts": conflicts or [],
        }
        self.write(audit_id, manifest, durable=durable)
        return manifest

    def write(self, audit_id: str, manifest: dict[str, Any], *, durable: bool = True) -> None:
        """Write one call's record, whole or not at all (fsynced when ``durable``)."""
        private_dirs(self.directory)
        target = self.directory / f"{audit_id}.json"
        sealed = {**{k: v for k, v in manifest.items() if k != SEAL}, SEAL: _sealed(self.key(), manifest)}
        self._grew(write_whole(target, _encoded(sealed), fsync=durable, point=f"record {audit_id}"))

    def read(self, audit_id: str) -> dict[str, Any]:
        """One call's record (HistoryError when there is none, or it is damaged; one evicted says so)."""
        if not AUDIT_ID.match(audit_id):
            raise HistoryError("HISTORY_NOT_FOUND", f"'{audit_id}' is not an audit id (see `mcp-guard history`)")
        try:
            data = json.loads((self.directory / f"{audit_id}.json").read_bytes())
        except FileNotFoundError:
            gone = next((e for e in reversed(self.evicted()) if e.get("audit_id") == audit_id), None)
            if gone is not None:
                raise HistoryError(
                    "HISTORY_NOT_FOUND", f"call {audit_id} cannot be undone: what it replaced was evicted on "
                    f"{str(gone.get('evicted', ''))[:19]} to keep the history within its bounds",
                ) from None  # fmt: skip
            raise HistoryError(
                "HISTORY_NOT_FOUND", f"no call {audit_id} changed files (as far as {self.directory.parent} remembers)"
            ) from None
        except (OSError, ValueError) as exc:
            raise HistoryError("HISTORY_BROKEN", f"the record of call {audit_id} is unreadable ({exc})") from None
        if not isinstance(data, dict):
            raise HistoryError("HISTORY_BROKEN", f"the record of call {audit_id} is damaged")
        data.pop(SEAL, None)  # (checked by ``unsealed``: a record is never dropped for its seal, red team 101 A)
        return data

    def unsealed(self, audit_id: str, *, missing: bool = True) -> bool:
        """Whether call ``audit_id``'s record does not check with this user's key (``missing``: when there is none).

        Threat: a record no server of the user wrote (planted in a state directory a command could make while it
        was gone and unregistered), played backwards by `mcp-guard undo` as the user's own call: asked first."""
        try:
            data = json.loads((self.directory / f"{audit_id}.json").read_bytes())
        except FileNotFoundError:
            return missing
        except (OSError, ValueError):
            return True
        seal = data.pop(SEAL, None) if isinstance(data, dict) else None
        return not isinstance(seal, str) or not hmac.compare_digest(seal, _sealed(self.key(), data))

    def all(self) -> list[dict[str, Any]]:
        """Every call's record, oldest first."""
        found: list[dict[str, Any]] = []
        with contextlib.suppress(FileNotFoundError), os.scandir(self.directory) as items:
            for item in items:
                stem, _, suffix = item.name.rpartition(".")
                if suffix != "json" or not AUDIT_ID.match(stem):
                    continue
                with contextlib.suppress(HistoryError):
                    found.append(self.read(stem))
        return sorted(found, key=lambda m: str(m.get("time", "")))

    def usage(self) -> int:
        """Bytes the records take on disk."""
        total = 0
        with contextlib.suppress(OSError), os.scandir(self.directory) as items:
            for item in items:
                with contextlib.suppress(OSError):
                    total += disk_usage(item.stat(follow_symlinks=False))
        return total

    def size(self, calls: Iterable[str]) -> int:
        """Bytes the records of ``calls`` take on disk."""
        total = 0
        for call in calls:
            with contextlib.suppress(OSError):
                total += disk_usage((self.directory / f"{call}.json").lstat()) if AUDIT_ID.match(call) else 0
        return total

    def evict(self, audit_id: str) -> int:
        """A call whose pre-images went: its record goes too (it cannot be undone any more) and a line in
        ``evicted.jsonl`` says so. Returns the bytes freed."""
        path = self.directory / f"{audit_id}.json"
        try:
            freed = disk_usage(path.lstat())
        except OSError:
            return 0
        try:
            manifest = self.read(audit_id)
        except HistoryError:
            manifest = {}  # (a damaged record goes all the same: it would count in the bounds for ever)
        line = {"audit_id": audit_id, "time": manifest.get("time", ""), "tool": manifest.get("tool", ""),
                "command": str(manifest.get("command", ""))[:200], "paths": len(manifest.get("changes", [])),
                "evicted": datetime.now(UTC).isoformat(timespec="milliseconds")}  # fmt: skip
        encoded = [_encoded(item) + b"\n" for item in [*self.evicted()[-(_EVICTED_KEPT - 1) :], line]]
        while len(encoded) > 1 and sum(map(len, encoded)) > _EVICTED_BYTES:
            del encoded[0]  # (it counts in the store's bounds: a small store filled by its own list of evictions)
        write_whole(self.directory / EVICTED, b"".join(encoded), fsync=False)
        path.unlink(missing_ok=True)
        return freed

    def evicted(self) -> list[dict[str, Any]]:
        """The last calls whose pre-images went to keep the store within its bounds, oldest first."""
        found: list[dict[str, Any]] = []
        with contextlib.suppress(OSError):
            for line in (self.directory / EVICTED).read_bytes().splitlines():
                with contextlib.suppress(ValueError):
                    item = json.loads(line)
                    if isinstance(item, dict):
                        found.append(item)
        return found


def needed_by_journals(directory: Path) -> set[str]:
    """The history ids the apply and undo journals in ``directory`` name: what their steps keep (maybe without data
    yet) and what an undo's steps put back — a dead server's run is finished by the next start of a server of its
    directories, and needs them."""
    needed: set[str] = set()
    with contextlib.suppress(OSError):
        for name in os.listdir(directory):
            if not (name.startswith("apply-") and name.endswith(".json")):
                continue
            try:
                fd = os.open(directory / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    continue
                with os.fdopen(os.dup(fd), "rb") as fh:
                    line = fh.readline(_MAX_JOURNAL_PLAN)
                # The plan, then a tab and its seal (``changes.journal.Journal``: JSON never holds a raw tab).
                plan = json.loads(line.rpartition(b"\t")[0] if b"\t" in line else line)
                for op in plan.get("ops", []):
                    if isinstance(op, dict):
                        needed.add(str(op.get("entry", "")))  # what a step keeps
                        record = op.get("record")
                        if isinstance(record, dict):
                            needed.add(str(record.get("before", "")))  # what an undo's step puts back
            except (OSError, ValueError, AttributeError):
                continue
            finally:
                os.close(fd)
    return needed


def only_copies(records: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    """Call id -> the paths whose pre-image its record keeps as the only copy of that work (git has none): what
    evicting the call loses for good (``changes.effects``: ``Judgement.only_copies``)."""
    found: dict[str, list[str]] = {}
    for record in records:
        paths = record.get("only_copies")
        if isinstance(paths, list) and paths:
            found[str(record.get("audit_id", ""))] = [str(path) for path in paths]
    return found


def victims(
    groups: list[tuple[list[str], list[str]]],
    precious: dict[str, list[str]],
    over: tuple[int, int],
    kept: Callable[[list[str], list[str]], object],
    usage: Callable[[list[str], list[str]], int],
    *,
    spared: dict[str, list[str]] | None = None,
) -> list[tuple[list[str], list[str]]]:
    """The call groups (oldest first: ``call_groups``) that go, whole, until ``over`` (bytes, entries above the
    goal) is paid: those holding no only copy of earlier work (``precious``) before those that do — threat: a
    flood of rewrites in a build directory evicting the one copy of the drafts an earlier call overwrote. A group
    ``kept`` says must stay is passed over, and so is one holding an only copy no person agreed to let go
    (``spared``: the bound then waits for that yes); ``usage`` is what a group frees."""
    chosen: list[tuple[list[str], list[str]]] = []
    extra_bytes, extra_entries = over
    for calls, ids in sorted(groups, key=lambda group: any(call in precious for call in group[0])):  # stable
        if extra_bytes <= 0 and extra_entries <= 0:
            break
        if not kept(calls, ids) and not any(call in (spared or {}) for call in calls):
            chosen.append((calls, ids))
            extra_bytes, extra_entries = extra_bytes - usage(calls, ids), extra_entries - len(ids)
    return chosen


def call_groups(owner: dict[str, str], records: Iterable[dict[str, Any]]) -> list[tuple[list[str], list[str]]]:
    """Entries (``owner``: entry id -> the call that kept it) grouped by the calls that need them, oldest group
    first: the call that kept an entry and every call whose record names it go together (a redo keeps the
    pre-images of the call it redoes under their old ids). Each group: (its calls, its entry ids)."""
    joined: dict[str, str] = {}

    def top(call: str) -> str:
        while joined.get(call, call) != call:
            call = joined[call]
        return call

    members = set(owner.values())
    records_seen = list(records)
    for record in records_seen:
        call = str(record.get("audit_id", ""))
        for change in record.get("changes", []):
            entry = str(change.get("before", "")) if isinstance(change, dict) else ""
            if entry in owner:
                members.add(call)
                if top(owner[entry]) != top(call):
                    joined[top(owner[entry])] = top(call)
    groups: dict[str, tuple[list[str], list[str]]] = {}
    for entry_id, call in owner.items():
        groups.setdefault(top(call), ([], []))[1].append(entry_id)
    for call in sorted(members):
        if top(call) in groups:
            groups[top(call)][0].append(call)  # every call whose record names one of the group's entries
    ordered = [(min(entries), (calls, entries)) for calls, entries in groups.values()]
    # A call that kept no entry (it only created files) is a group of its own: its record counts in the bytes
    # bound, so it must be able to go too (threat: records of such calls growing without bound). Ordered with
    # the others by its time, written as an entry id starts (HistoryStore.new_id).
    for record in records_seen:
        call = str(record.get("audit_id", ""))
        if call and call not in members:
            with contextlib.suppress(ValueError, TypeError):
                when = datetime.fromisoformat(str(record.get("time", ""))).astimezone(UTC)
                ordered.append((f"{when:%Y%m%dT%H%M%S%f}Z", ([call], [])))
    return [group for _key, group in sorted(ordered, key=lambda item: item[0])]
