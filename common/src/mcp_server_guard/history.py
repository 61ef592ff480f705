"""The history store: previous contents of replaced files, outside the jail, bounded in size.

Each entry is two files named by its id (``<UTC time>-<random>``): ``<id>.data`` holds the bytes
exactly as they were, ``<id>.json`` the original absolute path, time, size, mode and SHA-256.
When the store grows past its bound, the oldest entries go first; the one just saved never does.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ValidationError

_ID = re.compile(r"^\d{8}T\d{12}Z-[0-9a-f]{6}$")
_CHUNK = 1 << 20


class HistoryEntry(BaseModel):
    id: str
    path: str  # the original file's absolute path
    time: str  # when it was replaced (ISO 8601, UTC)
    size: int
    mode: int
    sha256: str


class HistoryError(Exception):
    pass


class HistoryStore:
    def __init__(self, directory: Path, max_bytes: int) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        self._total: int | None = None  # bytes in the store as last scanned, plus what we saved since

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
            finally:
                os.close(fd)
        except BaseException:
            data_path.unlink(missing_ok=True)
            meta.unlink(missing_ok=True)
            raise
        # Scan the store only when it may be over its bound, not on every save.
        self._total = (self._scan_total() if self._total is None else self._total) + size
        if self._total > self.max_bytes:
            self._evict(keep=entry_id)
        return entry

    def entries(self) -> list[HistoryEntry]:
        """Every entry, oldest first."""
        found: list[HistoryEntry] = []
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return found
        for name in sorted(names):
            if not name.endswith(".json") or not _ID.match(name[:-5]):
                continue
            try:
                found.append(HistoryEntry.model_validate_json((self.directory / name).read_bytes()))
            except (OSError, ValidationError):
                continue
        return found

    def get(self, entry_id: str) -> tuple[HistoryEntry, Path]:
        if not _ID.match(entry_id):
            raise HistoryError(f"'{entry_id}' is not a history id")
        try:
            entry = HistoryEntry.model_validate_json((self.directory / f"{entry_id}.json").read_bytes())
        except (OSError, ValidationError):
            raise HistoryError(f"no history entry {entry_id}") from None
        return entry, self.directory / f"{entry_id}.data"

    def _sizes(self) -> list[tuple[str, int]]:
        """(id, size) of every entry from one directory scan (no metadata parsing), oldest first."""
        sizes: list[tuple[str, int]] = []
        with os.scandir(self.directory) as it:
            for item in it:
                if item.name.endswith(".data") and _ID.match(item.name[:-5]):
                    sizes.append((item.name[:-5], item.stat(follow_symlinks=False).st_size))
        sizes.sort()
        return sizes

    def _scan_total(self) -> int:
        return sum(size for _, size in self._sizes())

    def _evict(self, keep: str) -> None:
        # Other servers may share the store: decide on a fresh scan, not on our running total.
        sizes = self._sizes()
        total = sum(size for _, size in sizes)
        for entry_id, size in sizes:
            if total <= self.max_bytes:
                break
            if entry_id == keep:
                continue
            for suffix in (".data", ".json"):
                (self.directory / f"{entry_id}{suffix}").unlink(missing_ok=True)
            total -= size
        self._total = total
