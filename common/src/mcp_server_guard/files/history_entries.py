"""The history store's entries as they lie on disk, and how they are read: each entry's metadata
(:class:`HistoryEntry`), its data checked against it (size, time, SHA-256), the store's inventory (what can be
restored, what is broken and why) and one scan of what every id has on disk. ``files.history.HistoryStore``, which
keeps, takes, bounds and evicts entries, builds on :class:`EntryReader`.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from mcp_server_guard.files.calls import HistoryError
from mcp_server_guard.files.copying import open_to_read
from mcp_server_guard.files.kept import disk_usage

_AT_FDCWD = -100

ENTRY_ID = re.compile(r"^\d{8}T\d{12}Z-[0-9a-f]{6}$")
_ID = ENTRY_ID
_CHUNK = 1 << 20


class HistoryEntry(BaseModel):
    model_config = ConfigDict(defer_build=True)  # (built with the first entry kept or read: issue 44)

    id: str
    path: str  # the original file's absolute path
    time: str  # when it was replaced (ISO 8601, UTC)
    size: int  # bytes of the file; of every file of a tree
    mode: int
    sha256: str  # of the bytes; "" for an entry kept by moving or linking the original (size and mtime check it)
    kind: str = "file"  # file, symlink, fifo, socket, tree
    audit_id: str = ""  # the call that replaced or deleted it
    files: int = 0  # a tree: how many paths it holds
    mtime_ns: int = 0  # an entry kept without hashing: its modification time, to check it is untouched
    original: list[int] = []  # (dev, ino) of what was kept, where it was (a copy is another inode)
    # A tree: its files that had other names when kept, (path in the tree, device, inode), each kept as a copy (a
    # change through another name must not change it); undo relinks it where that inode still holds the same bytes.
    links: list[tuple[str, int, int]] = []
    seal: str = ""  # an HMAC of the rest with the user's key (``entry_seal``); "" in an entry kept before seals


def entry_seal(key: bytes, entry: HistoryEntry) -> str:
    """An entry's seal: what the entry says (its path, kind, size, time, SHA-256, mode...) under the user's key
    (``registry.sealing_key``, the call records' and journals'). Threat (red team 103 F2): a sealed call record
    names its pre-images only by id, so whoever could write the store rewrote an entry's data and metadata together
    and `mcp-guard undo` put those bytes into the user's file unasked. An entry kept whole (moved or linked:
    no SHA-256) is checked by its sealed size and time only."""
    body = json.dumps(entry.model_dump(exclude={"seal"}), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hmac.new(key, b"mcp-guard history entry\n" + body.encode("utf-8", "backslashreplace"), "sha256").hexdigest()


class NoRoom(Exception):
    """What a call would keep does not fit the store's bounds or its disk: refused before anything changes."""


@dataclass(frozen=True)
class BrokenEntry:
    id: str
    problem: str
    path: str | None = None  # the original file, when the metadata says


@dataclass
class EntryFiles:
    """What one id has on disk."""

    usage: int = 0
    data: bool = False
    meta: bool = False


class EntryReader:
    """Reading the store at ``directory``: entries, their data, and what is on disk (no writes)."""

    directory: Path

    @staticmethod
    def is_id(entry_id: str) -> bool:
        """Whether ``entry_id`` has the shape of an entry id (a name in the store, nothing else)."""
        return bool(_ID.match(entry_id))

    def metadata(self, entry_id: str) -> HistoryEntry:
        """An entry's metadata (its data not looked at)."""
        return self._metadata(entry_id)

    def kind(self, entry_id: str) -> str:
        """What an entry holds: file, symlink, fifo, socket or tree."""
        return self._metadata(entry_id).kind

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
            entry = HistoryEntry.model_validate(json.loads(raw))
        except ValueError:  # not JSON, or not an entry (ValidationError)
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
        if entry.kind != "file":
            raise HistoryError(
                "HISTORY_BROKEN", f"history entry {entry_id} ({entry.path}) is a {entry.kind}: `mcp-guard undo` puts "
                f"it back with the rest of call {entry.audit_id or '(unknown)'}",
            )  # fmt: skip
        if not stat.S_ISREG(st.st_mode) or st.st_size != entry.size:
            raise HistoryError(
                "HISTORY_BROKEN",
                f"history entry {entry_id} ({entry.path}): its data file is {st.st_size} bytes, not {entry.size}",
            )
        if not entry.sha256 and entry.mtime_ns and st.st_mtime_ns != entry.mtime_ns:
            raise HistoryError("HISTORY_BROKEN", f"history entry {entry_id} ({entry.path}) changed since it was kept")
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
        if entry.sha256 and hashlib.sha256(data).hexdigest() != entry.sha256:
            raise HistoryError(
                "HISTORY_BROKEN", f"history entry {entry_id} ({entry.path}): its data does not match its SHA-256"
            )
        return entry, data

    def check(self, entry_id: str) -> str:
        """Why entry ``entry_id`` cannot be put back ("" when it can): its metadata or data is missing or damaged,
        or a file's data is not the size and time it was kept with."""
        try:
            entry = self._metadata(entry_id)
        except HistoryError as exc:
            return exc.message
        data = self.directory / f"{entry_id}.{'tree' if entry.kind == 'tree' else 'data'}"
        try:
            st = os.lstat(data)
        except OSError:
            return f"history entry {entry_id} ({entry.path}) has lost its data"
        if entry.kind == "file" and (st.st_size != entry.size or (entry.mtime_ns and st.st_mtime_ns != entry.mtime_ns)):
            return f"history entry {entry_id} ({entry.path}) changed since it was kept"
        return ""

    def holds(self, entry_id: str, fd: int) -> bool:
        """Whether the open regular file ``fd`` is byte for byte, by size and modification time, what entry
        ``entry_id`` kept (an undo makes a name one with a file still there only if it is that file)."""
        try:
            entry = self._metadata(entry_id)
            st = os.fstat(fd)
            data = open_to_read(_AT_FDCWD, str(self.directory / f"{entry_id}.data"))  # (mode 000 too)
        except (HistoryError, OSError):
            return False
        try:
            kept = os.fstat(data)
            if not stat.S_ISREG(st.st_mode) or (st.st_size, st.st_mtime_ns) != (entry.size, entry.mtime_ns or
                                                                                  kept.st_mtime_ns):  # fmt: skip
                return False
            if (kept.st_dev, kept.st_ino) == (st.st_dev, st.st_ino):
                return True
            offset = 0
            while chunk := os.pread(data, _CHUNK, offset):
                if os.pread(fd, len(chunk), offset) != chunk:
                    return False
                offset += len(chunk)
            return offset == st.st_size
        finally:
            os.close(data)

    def tree_links(self, entry_id: str) -> list[tuple[str, int, int]]:
        """The files of a kept tree that had other names when it was kept ([] for any other entry, or none)."""
        try:
            entry = self._metadata(entry_id)
        except HistoryError:
            return []
        return list(entry.links or []) if entry.kind == "tree" else []

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

    # -- what is on disk ----------------------------------------------------------------------------

    def _scan(self) -> dict[str, EntryFiles]:
        """What every id has on disk, from one directory scan (no metadata parsing)."""
        found: dict[str, EntryFiles] = {}
        try:
            it = os.scandir(self.directory)
        except FileNotFoundError:
            return found
        with it:
            for item in it:
                stem, dot, suffix = item.name.rpartition(".")
                if not dot or suffix not in ("data", "json", "tree") or not _ID.match(stem):
                    continue
                try:
                    st = item.stat(follow_symlinks=False)
                except OSError:
                    continue  # evicted meanwhile
                files = found.setdefault(stem, EntryFiles())
                files.usage += disk_usage(st) if suffix != "tree" else self._tree_usage(stem)
                if suffix in ("data", "tree"):
                    files.data = True
                else:
                    files.meta = True
        return found

    def _tree_usage(self, entry_id: str) -> int:
        """A tree's bytes, as its metadata says (walking it on every scan would cost too much)."""
        try:
            return int(json.loads((self.directory / f"{entry_id}.json").read_bytes()).get("size", 0))
        except (OSError, ValueError, AttributeError):
            return 0


__all__ = ["ENTRY_ID", "BrokenEntry", "EntryFiles", "EntryReader", "HistoryEntry", "NoRoom", "landed_at"]


def landed_at(change: dict[str, object]) -> int:
    """For a write killed after its rename and before its record said so (still pending, its time taken before the
    rename): the status-change time of the file it landed, when that is still at its path as written — the rename
    that set it also set the replaced file's, kept whole in the history (0: not so)."""
    after, path = change.get("after"), change.get("path")
    if not isinstance(after, list) or len(after) < 4 or not isinstance(path, str):
        return 0
    try:
        st = os.lstat(path)
    except OSError:
        return 0
    if [st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size] != after[:4]:
        return 0
    return st.st_ctime_ns
