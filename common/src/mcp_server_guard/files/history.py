"""The history store: previous contents of replaced files, outside the jail, bounded in size and count.

Each entry is two files named by its id (``<UTC time>-<random>``): ``<id>.data`` holds the bytes
exactly as they were, ``<id>.json`` the original absolute path, time, size, mode and SHA-256.

Crash order: a save writes the data, then the metadata; an eviction deletes the metadata, then the
data. So a crash leaves at worst a data file without metadata (an orphan, removed at the next start
once it is a minute old — younger ones may be another server's save in progress), never metadata
that promises data it lacks. Entries broken anyway (files deleted by hand) are reported, not served.

The store is bounded by what it uses on disk (both files of every entry, allocated blocks or size,
whichever is larger) and by its number of entries; the oldest go first, the one just saved never.
Once over a bound, eviction goes a tenth below it: a store at its bound is not rescanned on every save.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import stat
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ValidationError

_ID = re.compile(r"^\d{8}T\d{12}Z-[0-9a-f]{6}$")
_CHUNK = 1 << 20
# A data file without metadata younger than this may be a save in progress (of any server sharing the store).
ORPHAN_AGE_S = 60.0


class HistoryEntry(BaseModel):
    id: str
    path: str  # the original file's absolute path
    time: str  # when it was replaced (ISO 8601, UTC)
    size: int
    mode: int
    sha256: str


class HistoryError(Exception):
    """A history entry that cannot be served: ``code`` is HISTORY_NOT_FOUND or HISTORY_BROKEN."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True)
class BrokenEntry:
    id: str
    problem: str
    path: str | None = None  # the original file, when the metadata says


@dataclass
class _Files:
    """What one id has on disk."""

    usage: int = 0
    data: bool = False
    meta: bool = False
    data_mtime: float = 0.0


def disk_usage(st: os.stat_result) -> int:
    """Bytes a file costs: its allocated blocks, or its size when larger (a file system that reports no blocks)."""
    return max(st.st_size, st.st_blocks * 512)


class HistoryStore:
    def __init__(self, directory: Path, max_bytes: int, max_entries: int = 1000) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        # Usage and entry count as last scanned, plus what we saved since: a scan only when maybe over a bound.
        self._total: int | None = None
        self._count = 0

    def _ensure(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)

    def save(self, src_fd: int, original_path: str, mode: int) -> HistoryEntry:
        """Copy the whole content of ``src_fd`` into the store (durably) and return its entry."""
        self._ensure()
        now = datetime.now(UTC)
        entry_id = f"{now:%Y%m%dT%H%M%S%f}Z-{secrets.token_hex(3)}"
        data_path = self.directory / f"{entry_id}.data"
        hasher = hashlib.sha256()
        size = 0
        out = os.open(data_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            while chunk := os.pread(src_fd, _CHUNK, size):
                hasher.update(chunk)
                view = memoryview(chunk)
                while view:
                    view = view[os.write(out, view) :]
                size += len(chunk)
            os.fsync(out)
            usage = disk_usage(os.fstat(out))
        except BaseException:
            os.close(out)
            data_path.unlink(missing_ok=True)
            raise
        os.close(out)
        entry = HistoryEntry(
            id=entry_id,
            path=original_path,
            time=now.isoformat(timespec="milliseconds"),
            size=size,
            mode=mode & 0o7777,
            sha256=hasher.hexdigest(),
        )
        meta = self.directory / f"{entry_id}.json"
        try:
            fd = os.open(meta, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                os.write(fd, entry.model_dump_json().encode())
                os.fsync(fd)
                usage += disk_usage(os.fstat(fd))
            finally:
                os.close(fd)
        except BaseException:
            meta.unlink(missing_ok=True)
            data_path.unlink(missing_ok=True)
            raise
        if self._total is None:
            self._total, self._count = self._measure(self._scan())
        else:
            self._total += usage
            self._count += 1
        if self._total > self.max_bytes or self._count > self.max_entries:
            self._evict(keep=entry_id)
        return entry

    # -- reading ------------------------------------------------------------------------------------

    def inventory(self) -> tuple[list[HistoryEntry], list[BrokenEntry]]:
        """Every entry, oldest first: those that can be restored, and those that cannot (with why)."""
        good: list[HistoryEntry] = []
        broken: list[BrokenEntry] = []
        for entry_id, files in sorted(self._scan().items()):
            if not files.meta:
                continue  # a data file alone: a save in progress, or an orphan the next start removes
            try:
                entry, _ = self.get(entry_id)
            except HistoryError as exc:
                path = None
                if exc.code == "HISTORY_BROKEN":
                    with contextlib.suppress(HistoryError):
                        path = self._metadata(entry_id).path
                broken.append(BrokenEntry(entry_id, exc.message, path))
            else:
                good.append(entry)
        return good, broken

    def entries(self) -> list[HistoryEntry]:
        """Every entry that can be restored, oldest first."""
        return self.inventory()[0]

    def _metadata(self, entry_id: str) -> HistoryEntry:
        try:
            raw = (self.directory / f"{entry_id}.json").read_bytes()
        except FileNotFoundError:
            raise HistoryError("HISTORY_NOT_FOUND", f"no history entry {entry_id} in {self.directory}") from None
        except OSError as exc:
            raise HistoryError(
                "HISTORY_BROKEN", f"history entry {entry_id}: metadata unreadable ({exc.strerror})"
            ) from None
        try:
            entry = HistoryEntry.model_validate_json(raw)
        except ValidationError:
            raise HistoryError("HISTORY_BROKEN", f"history entry {entry_id}: metadata is damaged") from None
        if entry.id != entry_id:
            raise HistoryError("HISTORY_BROKEN", f"history entry {entry_id}: metadata names another entry")
        return entry

    def get(self, entry_id: str) -> tuple[HistoryEntry, Path]:
        """An entry and its data file, checked to be there with the recorded size."""
        if not _ID.match(entry_id):
            raise HistoryError("HISTORY_NOT_FOUND", f"'{entry_id}' is not a history id (see `mcp-guard history list`)")
        entry = self._metadata(entry_id)
        data = self.directory / f"{entry_id}.data"
        try:
            st = os.stat(data, follow_symlinks=False)
        except FileNotFoundError:
            raise HistoryError(
                "HISTORY_BROKEN",
                f"history entry {entry_id} ({entry.path}) has lost its data file; it cannot be restored",
            ) from None
        except OSError as exc:
            raise HistoryError(
                "HISTORY_BROKEN", f"history entry {entry_id}: data unreadable ({exc.strerror})"
            ) from None
        if not stat.S_ISREG(st.st_mode) or st.st_size != entry.size:
            raise HistoryError(
                "HISTORY_BROKEN",
                f"history entry {entry_id} ({entry.path}): its data file is {st.st_size} bytes, not {entry.size}",
            )
        return entry, data

    def read(self, entry_id: str) -> tuple[HistoryEntry, bytes]:
        """An entry and its content, verified against the recorded SHA-256."""
        entry, path = self.get(entry_id)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise HistoryError(
                "HISTORY_BROKEN", f"history entry {entry_id}: data unreadable ({exc.strerror})"
            ) from None
        if hashlib.sha256(data).hexdigest() != entry.sha256:
            raise HistoryError(
                "HISTORY_BROKEN", f"history entry {entry_id} ({entry.path}): its data does not match its SHA-256"
            )
        return entry, data

    # -- bounds and start-up clean-up -----------------------------------------------------------

    def _scan(self) -> dict[str, _Files]:
        """What every id has on disk, from one directory scan (no metadata parsing)."""
        found: dict[str, _Files] = {}
        try:
            it = os.scandir(self.directory)
        except FileNotFoundError:
            return found
        with it:
            for item in it:
                stem, dot, suffix = item.name.rpartition(".")
                if not dot or suffix not in ("data", "json") or not _ID.match(stem):
                    continue
                try:
                    st = item.stat(follow_symlinks=False)
                except OSError:
                    continue  # evicted meanwhile
                files = found.setdefault(stem, _Files())
                files.usage += disk_usage(st)
                if suffix == "data":
                    files.data, files.data_mtime = True, st.st_mtime
                else:
                    files.meta = True
        return found

    @staticmethod
    def _measure(scan: dict[str, _Files]) -> tuple[int, int]:
        return sum(f.usage for f in scan.values()), len(scan)

    def _remove(self, entry_id: str) -> None:
        # Metadata first: a crash in between leaves an orphan data file, never an entry without its data.
        for suffix in (".json", ".data"):
            (self.directory / f"{entry_id}{suffix}").unlink(missing_ok=True)

    def _evict(self, keep: str | None, scan: dict[str, _Files] | None = None) -> None:
        # Other servers may share the store: decide on a fresh scan, not on our running totals.
        scan = self._scan() if scan is None else scan
        total, count = self._measure(scan)
        if total <= self.max_bytes and count <= self.max_entries:
            self._total, self._count = total, count
            return
        # Over a bound: go a tenth below it, so that a store at its bound is scanned once per many saves.
        max_bytes = self.max_bytes - self.max_bytes // 10
        max_entries = self.max_entries - max(1, self.max_entries // 10)
        young = time.time() - ORPHAN_AGE_S
        for entry_id in sorted(scan):
            if total <= max_bytes and count <= max_entries:
                break
            files = scan[entry_id]
            if entry_id == keep or (not files.meta and files.data_mtime > young):
                continue  # the one just saved, or maybe another server's save in progress
            self._remove(entry_id)
            total -= files.usage
            count -= 1
        self._total, self._count = total, count

    def sweep(self) -> int:
        """At start-up: remove orphan data files older than a minute, then bring the store within its bounds.

        Returns how many orphans were removed.
        """
        self._ensure()
        scan = self._scan()
        old = time.time() - ORPHAN_AGE_S
        orphans = [i for i, f in scan.items() if f.data and not f.meta and f.data_mtime < old]
        for entry_id in orphans:
            (self.directory / f"{entry_id}.data").unlink(missing_ok=True)
            del scan[entry_id]
        self._evict(keep=None, scan=scan)
        return len(orphans)


__all__ = ["ORPHAN_AGE_S", "BrokenEntry", "HistoryEntry", "HistoryError", "HistoryStore", "disk_usage"]
