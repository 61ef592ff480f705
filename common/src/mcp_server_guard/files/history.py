"""The history store: previous contents of replaced files, outside the jail, bounded in size and count.

Each entry is named by its id (``<UTC time>-<random>``): ``<id>.data`` holds what was at the path exactly as it
was (the bytes of a file, or — for what a command deleted or replaced — the very inode, moved here: a file, a
symlink, a FIFO), ``<id>.tree`` a whole directory tree moved here, and ``<id>.json`` the original absolute path,
time, size, mode, kind, SHA-256 (when the bytes were copied) and the ``audit_id`` of the call that replaced it.
A call that changed files also leaves a record (``files.calls``): what it did to each path, with the history ids
of what was there before, so that ``mcp-guard undo`` can put one call's work back.

Pre-images move, or are hard-linked, into a store on the file's file system (a 100 MB file is kept in
microseconds); elsewhere they are copied.

Crash order. A save (file_write's copy) writes the data, then the metadata. A keep (what an apply or an undo
replaces or deletes, moved or linked here) writes the metadata first (whole, renamed in), then moves the data: the
apply's journal names the id, so a kill in between leaves an entry the next start finishes, never a moved tree
nobody can tell is a pre-image. Removal deletes the metadata, then the data. Broken entries are reported.

Orphans go at once, and only a dead server's: before it creates ``<id>.data`` (or moves a ``.tree`` in), a
server notes the id in its own ``.owners/`` directory (``files.liveness.OwnedDir``, locked for its life) and drops
the note once the metadata is written. A data file without metadata no live server noted nor an unfinished
journal names is a dead server's: the next start, ``mcp-guard history prune`` and every eviction remove it.
Several servers may share the store.

Bounds (what it uses on disk — both files of every entry and the call records, allocated blocks or size, whichever
is larger — and its number of entries) refuse before they evict: a call whose pre-images do not fit them alone is
refused before it changes anything (:meth:`HistoryStore.room`). Past a bound, whole calls go, oldest first — those
holding the only copy of earlier work last (:meth:`HistoryStore.evicting` says which a call would push out, so it
can be asked first); never a call still running, nor one an unfinished journal names — down to a tenth below it;
``calls/evicted.jsonl`` says which (``files.calls``).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import json
import logging
import os
import secrets
import stat
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from mcp_server_guard import faults, linux
from mcp_server_guard.files.calls import (
    AUDIT_ID,
    CALLS,
    UNSEALED,
    CallRecords,
    HistoryError,
    call_groups,
    needed_by_journals,
    only_copies,
    victims,
)
from mcp_server_guard.files.copying import as_owner, copy_into, copy_xattrs, given_owner
from mcp_server_guard.files.history_entries import ENTRY_ID as _ID
from mcp_server_guard.files.history_entries import EntryFiles as _Files
from mcp_server_guard.files.history_entries import EntryReader, HistoryEntry, NoRoom, entry_seal, landed_at
from mcp_server_guard.files.kept import (
    disk_usage,
    finish_aside,
    keep_data,
    kept_kind,
    unshare,
    write_whole,
)
from mcp_server_guard.files.liveness import OwnedDir, live_dirs
from mcp_server_guard.files.trees import remove_dead, remove_tree
from mcp_server_guard.paths import private_dirs

log = logging.getLogger("mcp_server_guard.files.history")


OWNERS = ".owners"  # each live server's notes of the saves it has in flight (see files.liveness)
JOURNALS = ".journal"  # changes.apply's journals (``changes.journal``): the ids an unfinished apply still needs
_AT_FDCWD = -100
_RENAME_NOREPLACE = 1
_SLACK = 1 << 20  # bytes a call's records and metadata take besides its pre-images, at least
_ENTRY_DISK = 3 * 4096  # disk one entry takes besides its bytes, at most: its data's last block, metadata, record


def _size(nbytes: int) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} bytes"


class HistoryStore(EntryReader):
    def __init__(self, directory: Path, max_bytes: int, max_entries: int = 1000) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        # Usage and entry count as last scanned, plus what we saved since: a scan only when maybe over a bound.
        self._total: int | None = None
        self._count = 0
        self._owned: OwnedDir | None = None
        self._owned_lock = threading.Lock()
        self.approved: set[str] = set()  # calls whose only copies of earlier work a person agreed to let go
        self._running: dict[str, int] = {}  # calls of this process keeping pre-images now: never evicted
        self._notes: dict[str, int] = {}  # entries noted in flight by this process, and how many times
        self.calls = CallRecords(directory / CALLS, self._grew)

    def _ensure(self) -> None:
        private_dirs(self.directory)

    @contextlib.contextmanager
    def _in_flight(self, entry_id: str) -> Iterator[None]:
        """While ``entry_id`` gets its data and metadata (or, :meth:`pinned`, until what it was kept for is done),
        a note in this server's own directory says so: a data file without metadata and without a live server's
        note is an orphan (see the module's docstring), and no server evicts a noted entry."""
        with self._owned_lock:
            if self._owned is None:
                self._owned = OwnedDir(self.directory / OWNERS)
            note = self._owned.path / entry_id
            self._notes[entry_id] = self._notes.get(entry_id, 0) + 1
            note.touch(mode=0o600)
        try:
            yield
        finally:
            with self._owned_lock:
                left = self._notes.pop(entry_id) - 1
                if left:
                    self._notes[entry_id] = left
                else:
                    note.unlink(missing_ok=True)

    def pinned(self, entry_id: str) -> contextlib.AbstractContextManager[None]:
        """Keep ``entry_id`` from every server's eviction until the change it was kept for has landed (a file_write
        between its backup and its rename)."""
        return self._in_flight(entry_id)

    def close(self) -> None:
        """At exit: nothing of ours is in flight any more; our notes go with our lock."""
        with self._owned_lock:
            if self._owned is not None:
                remove_tree(self._owned.path)
                self._owned.close()
                self._owned = None

    def unsealed(self, audit_id: str) -> str:
        """Why playing call ``audit_id`` backwards asks first ("" when it need not): its record, or an entry its
        record puts back, does not check with the user's key (``CallRecords.unsealed``, ``entry_seal``)."""
        if self.calls.unsealed(audit_id):
            return f"the record of call {audit_id} is {UNSEALED}"
        with contextlib.suppress(HistoryError):
            named = self._named_at()
            for change in self.calls.read(audit_id).get("changes", []):
                before = str(change.get("before") or "") if isinstance(change, dict) else ""
                if before and self.entry_unsealed(before):
                    return f"the saved version {before} that call {audit_id} puts back is {UNSEALED}"
                if before and self.changed_since(before, named.get(before, 0)):
                    return (f"the saved version {before} that call {audit_id} puts back was changed after the call "
                            "(not by a server)")  # fmt: skip
        return ""

    def entry_unsealed(self, entry_id: str) -> bool:
        """Whether entry ``entry_id``'s metadata does not check with the user's key (one that is missing or
        damaged is not: it cannot be put back at all, and says so)."""
        try:
            entry = self._metadata(entry_id)
        except HistoryError:
            return False
        return not hmac.compare_digest(entry.seal, entry_seal(self.calls.key(), entry))

    def _named_at(self) -> dict[str, int]:
        """Entry id -> the last time a sealed record naming it was applied (a redo keeps pre-images again under
        their old ids, and its record names them)."""
        named: dict[str, int] = {}
        for record in self.calls.all():
            if not self.calls.unsealed(str(record.get("audit_id"))):
                for change in record.get("changes", []):
                    before = str(change.get("before") or "") if isinstance(change, dict) else ""
                    applied = int(record.get("applied_ns", 0))
                    if record.get("pending") and before:
                        applied = max(applied, landed_at(change))
                    named[before] = max(named.get(before, 0), applied)
        return named

    def changed_since(self, entry_id: str, applied_ns: int = 0) -> bool:
        """Whether an entry kept whole (moved or linked: no SHA-256, its sealed size and time check it) had its data
        changed after ``applied_ns`` (default: ``_named_at``), the sealed time a record naming it was applied: the
        kernel sets a file's status-change time at every change of its bytes, times or names, and nobody can set it
        back. Threat (red
        team 105 F5): other bytes of the same size written into its data and the time set back with ``utime``,
        put back unasked. A tree's every file, directory and link is looked at (never followed)."""
        try:
            entry = self._metadata(entry_id)
        except HistoryError:
            return False
        applied_ns = applied_ns or self._named_at().get(entry_id, 0)
        if entry.sha256 or not applied_ns:
            return False
        top = self.directory / f"{entry_id}.{'tree' if entry.kind == 'tree' else 'data'}"
        try:
            if os.lstat(top).st_ctime_ns > applied_ns:
                return True
            for where, dirs, files in os.walk(top) if entry.kind == "tree" else ():
                for name in (*dirs, *files):
                    if os.lstat(os.path.join(where, name)).st_ctime_ns > applied_ns:
                        return True
        except OSError:
            return False  # (gone or unreadable: it cannot be put back, and undo says so)
        return False

    def marked(self, audit_id: str) -> str:
        """What `mcp-guard history` says of a call here whose record or saved versions do not check."""
        return "  (not sealed by your servers' key)" if (self.calls.unsealed(audit_id, missing=False) or
                                                         self.unsealed(audit_id)) else ""  # fmt: skip

    @staticmethod
    def new_id() -> str:
        return f"{datetime.now(UTC):%Y%m%dT%H%M%S%f}Z-{secrets.token_hex(3)}"

    def save(
        self, src_fd: int, original_path: str, mode: int, audit_id: str = "", entry_id: str | None = None
    ) -> HistoryEntry:
        """Copy the whole content of ``src_fd`` into the store (durably) and return its entry."""
        self._ensure()
        size = os.fstat(src_fd).st_size
        why = self.room(1, size, copied=size)
        if why:
            raise NoRoom(why)
        now = datetime.now(UTC)
        entry_id = entry_id or self.new_id()
        data_path = self.directory / f"{entry_id}.data"
        with self._in_flight(entry_id), self.running(audit_id or entry_id):
            return self._save(src_fd, data_path, entry_id, original_path, mode, audit_id, now)

    def _save(
        self, src_fd: int, data_path: Path, entry_id: str, original_path: str, mode: int, audit_id: str, now: datetime
    ) -> HistoryEntry:
        hasher = hashlib.sha256()
        size = os.fstat(src_fd).st_size
        out = os.open(data_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            linux.copy_data(src_fd, out, size, hasher)  # a sparse file's pre-image keeps its holes
            # The pre-image is the file as it was: its mode, times and attributes too (an undo puts this inode back).
            copy_xattrs(src_fd, out)
            before = os.fstat(src_fd)
            os.fchmod(out, mode & 0o7777)
            os.utime(out, ns=(before.st_atime_ns, before.st_mtime_ns))
            # and its owner and group (red team 115 F1: an undo put a group-shared file back with the server's group)
            given_owner(out, before)
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
            audit_id=audit_id,
            original=[before.st_dev, before.st_ino],  # (what it was a copy of: an undo relinks its other names)
        )
        try:
            usage += self._write_meta(entry)
        except BaseException:
            data_path.unlink(missing_ok=True)
            raise
        self._account(usage)
        return entry

    def _write_meta(self, entry: HistoryEntry, *, fsync: bool = True) -> int:
        """Write an entry's metadata, whole or not at all (a temp name renamed: a kill never leaves it empty);
        returns the bytes it uses."""
        # A path that is not UTF-8 (a surrogate escape) is kept as a \udcXX escape: still UTF-8, still JSON.
        entry.seal = entry_seal(self.calls.key(), entry)
        data = json.dumps(entry.model_dump(), ensure_ascii=False).encode("utf-8", "backslashreplace")
        return write_whole(self.directory / f"{entry.id}.json", data, fsync=fsync, point=f"history meta {entry.id}")

    def _grew(self, usage: int) -> None:
        if self._total is not None:
            self._total += usage

    def _account(self, usage: int) -> None:
        if self._total is None:
            self._total, self._count = self._measure(self._scan())
        else:
            self._total += usage
            self._count += 1
        if self._total > self.max_bytes or self._count > self.max_entries:
            self._evict()

    @contextlib.contextmanager
    def running(self, audit_id: str) -> Iterator[None]:
        """While a call of this process keeps pre-images (an apply, an undo, a write): none of its are evicted, and
        once it is done the store is brought within its bounds (other calls' entries go, whole, oldest first)."""
        with self._owned_lock:
            self._running[audit_id] = self._running.get(audit_id, 0) + 1
        try:
            yield
        finally:
            with self._owned_lock:
                left = self._running.pop(audit_id) - 1
                if left:
                    self._running[audit_id] = left
            if self._total is not None and (self._total > self.max_bytes or self._count > self.max_entries):
                with contextlib.suppress(OSError):
                    self._evict()

    def room(self, count: int, nbytes: int, *, copied: int = 0, record: int = 0) -> str:
        """Why one call cannot keep ``count`` pre-images of ``nbytes`` and a call record of about ``record`` bytes
        ("" when it can): more than the store's bounds (a call never evicts its own, so it must fit them alone), or
        — for the ``copied`` bytes that must be copied because the store lies on another file system — more than
        its disk has free."""
        if count > self.max_entries:
            return (f"it would keep {count} previous versions of files, more than the history's bound of "
                    f"{self.max_entries} entries (history_max_entries)")  # fmt: skip
        # What the store measures is disk: each entry's data rounded up to blocks, its metadata file, its line in
        # the call's record — counted here the same way, so that a call let through is never over the bound alone.
        disk = nbytes + count * _ENTRY_DISK + record
        if disk > self.max_bytes:
            return (f"it would keep {_size(nbytes)} of previous contents in {count} entries ({_size(disk)} of "
                    f"disk with their metadata and the call's record of what it changed), more than the history's "
                    f"bound of {_size(self.max_bytes)} (history_max_bytes)")  # fmt: skip
        # What it writes on the history's disk, wherever that lies: the bytes it copies there (on another file
        # system), each entry's metadata and last block, the record — a call that fills that disk midway must go
        # back, which needs room too (red team 73: on the project's own file system nothing was counted).
        need = copied + count * _ENTRY_DISK + record + _SLACK
        self._ensure()
        fs = os.statvfs(self.directory)
        free = fs.f_bavail * fs.f_frsize
        if need > free:
            return (f"applying it safely needs {_size(need)} on the history store's disk ({self.directory}: "
                    f"{count} previous version(s) of {_size(nbytes)}, their metadata and the call's record), which "
                    f"has {_size(free)} free")  # fmt: skip
        return ""

    def keep(
        self,
        dirfd: int,
        name: str,
        original_path: str,
        audit_id: str,
        *,
        move: bool,
        entry_id: str | None = None,
        tree: tuple[int, int] = (0, 0),
        durable: bool = True,
        links: list[tuple[str, int, int]] | None = None,
    ) -> HistoryEntry:
        """Keep what is at ``name`` in ``dirfd`` (never followed) as a history entry: moved into the store
        (``move``: it is being deleted), or hard-linked (a file about to be replaced by a rename). On another file
        system, copied (a move then removes the original). ``tree``: a directory's (path count, bytes).
        ``durable``: fsync the metadata (a caller that syncs the whole file system afterwards says False)."""
        self._ensure()
        entry_id = entry_id or self.new_id()
        st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
        kind = kept_kind(st.st_mode)
        target = self.directory / f"{entry_id}.{'tree' if kind == 'tree' else 'data'}"
        with self._in_flight(entry_id):
            files, size = tree if kind == "tree" else (1, st.st_size if kind == "file" else 0)
            entry = HistoryEntry(
                id=entry_id,
                path=original_path,
                time=datetime.now(UTC).isoformat(timespec="milliseconds"),
                size=size,
                mode=stat.S_IMODE(st.st_mode),
                sha256="",  # kept whole (moved, linked, or copied with its times): its size and time check it
                kind=kind,
                audit_id=audit_id,
                files=files,
                mtime_ns=st.st_mtime_ns,
                original=[st.st_dev, st.st_ino],
                links=list(links or ()) if kind == "tree" else [],
            )
            # Write ahead: the metadata first, so that a kill between the two leaves an entry an unfinished apply
            # still names (it moves the data when it is finished), never data nobody can tell is a pre-image.
            usage = 0
            if not (self.directory / f"{entry_id}.json").exists():
                usage = self._write_meta(entry, fsync=durable)
            else:
                entry = self._metadata(entry_id)  # kept before a crash: as it was written then
            faults.point(f"history data {entry_id}")
            try:
                keep_data(dirfd, name, st, target, entry_id, move=move)
            except BaseException:
                if usage and not os.path.lexists(target):
                    (self.directory / f"{entry_id}.json").unlink(missing_ok=True)  # it keeps nothing after all
                raise
            if entry.links:
                try:
                    unshare(target, entry.links)
                except OSError:
                    # Threat: a tree gone from the project into an entry no record names (a full disk while its
                    # files with names outside it are made copies: red team 60 F4): moved back, the keep undone.
                    if move and os.path.isdir(target) and not os.path.islink(target):
                        with contextlib.suppress(OSError):
                            linux.renameat2(_AT_FDCWD, str(target), dirfd, name, _RENAME_NOREPLACE)
                            (self.directory / f"{entry_id}.json").unlink(missing_ok=True)
                    raise
            if usage:
                self._account(usage + (disk_usage(st) if kind != "tree" else size))
            return entry

    def take(
        self,
        entry_id: str,
        dirfd: int,
        name: str,
        *,
        replace: bool = False,
        forget: bool = True,
        over: os.stat_result | None = None,
    ) -> HistoryEntry:
        """Put an entry's pre-image back at ``name`` in ``dirfd`` (which must be free, unless ``replace``: a file
        there is replaced in one rename): moved out of the store (copied where it lies on another file system: then
        only over the file as ``over`` shows it, or as it was when the copy began; else WrittenMeanwhile); the entry
        is gone afterwards — its record too unless not ``forget`` (the caller still needs it after a crash:
        :meth:`forget` then)."""
        entry = self._metadata(entry_id)
        source = self.directory / f"{entry_id}.{'tree' if entry.kind == 'tree' else 'data'}"
        if not os.path.lexists(source):
            raise HistoryError("HISTORY_BROKEN", f"history entry {entry_id} ({entry.path}) has lost its data")
        faults.point(f"take {entry_id}")
        try:
            if replace:
                as_owner(lambda: os.rename(source, name, dst_dir_fd=dirfd), dirfd, (_AT_FDCWD, str(source)),
                         after=(dirfd, name))  # fmt: skip
            else:
                as_owner(lambda: linux.renameat2(_AT_FDCWD, str(source), dirfd, name, _RENAME_NOREPLACE), dirfd,
                         (_AT_FDCWD, str(source)), after=(dirfd, name))  # fmt: skip
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            where = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                st = os.stat(source.name, dir_fd=where, follow_symlinks=False)
                if replace and over is None:  # (what it replaces, as it is before the copy)
                    with contextlib.suppress(FileNotFoundError):
                        over = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
                # Whole or not at all (a temp name beside it, renamed): a full disk never leaves an empty file. (Into
                # a directory of the user's they may not write too: red team 64 F1, an undo refused.)
                target, temp = Path(f"/proc/self/fd/{dirfd}") / name, f".mcp-guard-{entry_id}.tmp"
                as_owner(
                    lambda: copy_into(where, source.name, target, st, replace=replace, temp=temp, over=over), dirfd
                )
            finally:
                os.close(where)
        faults.point(f"taken {entry_id}")
        if forget:
            self._remove(entry_id)
        return entry

    def finish_aside(self, entry_id: str, dirfd: int) -> bool:
        """Finish keeping what a step cut by a crash set aside in ``dirfd`` for entry ``entry_id`` (a file or tree
        being deleted into a history on another file system: ``kept.keep_data``): copied in unless it is there
        already, then removed from the project. Whether there was anything. (Asked only by a step finished after a
        crash.)"""
        if not _ID.match(entry_id) or not (self.directory / f"{entry_id}.json").exists():
            return False
        kind = self._metadata(entry_id).kind
        return finish_aside(dirfd, self.directory / f"{entry_id}.{'tree' if kind == 'tree' else 'data'}", entry_id)

    def taken(self, entry_id: str) -> bool:
        """Whether an entry's pre-image was put back already — its data is gone, as a take a crash cut before the
        metadata went leaves it; that metadata goes now. (Asked only by a step finished after a crash.)"""
        if any(os.path.lexists(self.directory / f"{entry_id}{suffix}") for suffix in (".data", ".tree")):
            return False
        (self.directory / f"{entry_id}.json").unlink(missing_ok=True)
        return True

    def forget(self, entry_id: str) -> None:
        """Drop an entry kept for a change that did not happen after all (a write that must decide again), or the
        record of one whose pre-image was put back (``take(..., forget=False)``)."""
        if _ID.match(entry_id):
            self._remove(entry_id)

    # -- bounds and start-up clean-up -----------------------------------------------------------

    def _measure(self, scan: dict[str, _Files]) -> tuple[int, int]:
        """(bytes, entries): the entries of ``scan`` and the calls' records (they count in the bytes bound)."""
        return sum(f.usage for f in scan.values()) + self.calls.usage(), len(scan)

    def _remove(self, entry_id: str) -> None:
        # Metadata first: a crash in between leaves an orphan data file, never an entry without its data.
        for suffix in (".json", ".data"):
            (self.directory / f"{entry_id}{suffix}").unlink(missing_ok=True)
        tree = self.directory / f"{entry_id}.tree"
        if tree.is_dir() and not tree.is_symlink():
            remove_tree(tree)

    def _evict(self, scan: dict[str, _Files] | None = None) -> None:
        """Bring the store within its bounds: whole calls go (their entries, their record noted in ``evicted.jsonl``)
        as ``_victims`` picks them, on a fresh scan (other servers may share the store)."""
        scan = self._scan() if scan is None else scan
        total, count = self._measure(scan)
        if total <= self.max_bytes and count <= self.max_entries:
            self._total, self._count = total, count
            return
        total -= self._drop_orphans(scan)
        for calls, ids in self._victims(scan, total, len(scan), newest=False)[0]:
            for entry_id in ids:
                self._remove(entry_id)
                total -= scan.pop(entry_id).usage
            total -= sum(self.calls.evict(call) for call in calls if AUDIT_ID.match(call))
        self._total, self._count = total, len(scan)

    def evicting(self, count: int, nbytes: int, own: str = "") -> dict[str, list[str]]:
        """The calls (and paths) whose only copy of earlier work would go now for ``count`` more pre-images of
        ``nbytes`` (by call ``own``): what a person must agree to (``approved``) before they go."""
        total, entries = self._measure(scan := self._scan())
        total, entries = total + nbytes + count * _ENTRY_DISK, entries + count
        if total <= self.max_bytes and entries <= self.max_entries:
            return {}
        chosen, precious = self._victims(scan, total, entries, newest=True, own=own)
        return {call: precious[call] for calls, _ in chosen for call in calls if call in precious}

    def _victims(
        self, scan: dict[str, _Files], total: int, count: int, *, newest: bool, own: str = ""
    ) -> tuple[list[tuple[list[str], list[str]]], dict[str, list[str]]]:
        """The call groups that go to bring ``total``/``count`` a tenth below the bounds (a store at its bound is
        then not rescanned on every save), and every call's only copies of earlier work (``calls.victims``) —
        never a call of this process still running (nor ``own``), one with an entry a live server is saving or an
        unfinished apply or undo names, nor (``newest`` False: evicting now) the newest, which fitted alone, or a
        call holding an only copy of earlier work a person has not agreed to let go (``approved``): the bound waits."""
        over = total - self.max_bytes + self.max_bytes // 10, count - self.max_entries + max(1, self.max_entries // 10)
        spared, running = self._spared(), {*self._running.copy(), own}  # copy(): atomic, other threads go on
        records, owner = self.calls.all(), dict.fromkeys(sorted(scan), "")  # entry -> the call that kept it
        for entry_id in owner:  # an entry of no call, or with broken metadata, is one of its own
            with contextlib.suppress(HistoryError):
                owner[entry_id] = self._metadata(entry_id).audit_id
        precious = only_copies(records)
        groups = call_groups({i: call or i for i, call in owner.items()}, records)[: None if newest else -1]
        stays = lambda calls, ids: running.intersection(calls) or spared.intersection(ids)  # noqa: E731
        frees = lambda calls, ids: sum(scan[i].usage for i in ids) + self.calls.size(calls)  # noqa: E731
        unasked = {} if newest else {call: paths for call, paths in precious.items() if call not in self.approved}
        return victims(groups, precious, over, stays, frees, spared=unasked), precious

    def usage(self) -> tuple[int, int]:  # (bytes, entries) on disk now, orphans included
        return self._measure(self._scan())

    def sweep(self) -> int:
        """At start-up and for ``mcp-guard history prune``: remove what dead servers left (notes, data files they
        never gave metadata), then bring the store within its bounds. Returns how many orphans were removed."""
        self._ensure()
        remove_dead(self.directory / OWNERS)
        before = len(scan := self._scan())
        self._drop_orphans(scan)
        removed = before - len(scan)
        self._evict(scan)
        return removed

    def _drop_orphans(self, scan: dict[str, _Files]) -> int:
        """Remove the data of every id in ``scan`` that has no metadata, no live server's note and no unfinished
        apply that needs it (it is taken out of ``scan``); the bytes that went. Safe against a save meanwhile: the
        candidates come from ``scan`` (made before), the notes are read after, and each candidate's metadata is
        looked for again right before it goes (a save notes its id before its data, drops it after the metadata)."""
        candidates = [i for i, f in scan.items() if f.data and not f.meta]
        if not candidates:
            return 0
        spared = self._spared()
        freed = 0
        for entry_id in candidates:
            if entry_id in spared or os.path.lexists(self.directory / f"{entry_id}.json"):
                continue
            for suffix in (".data", ".tree"):
                target = self.directory / f"{entry_id}{suffix}"
                if os.path.lexists(target):
                    remove_tree(target)
            freed += scan.pop(entry_id).usage
        if freed:
            log.info("history %s: removed %d byte(s) a dead server left without metadata", self.directory, freed)
        return freed

    def _spared(self) -> set[str]:
        """The ids live servers have noted as being saved now, and those an unfinished journal names."""
        busy = needed_by_journals(self.directory / JOURNALS)
        for owned in live_dirs(self.directory / OWNERS):
            with contextlib.suppress(OSError):
                busy.update(name for name in os.listdir(owned) if _ID.match(name))
        return busy


__all__ = [
    "CALLS",
    "OWNERS",
    "HistoryError",
    "HistoryStore",
]
