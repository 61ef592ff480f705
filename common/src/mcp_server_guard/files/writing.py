"""Guarded, atomic, durable file writes that never lose the previous content.

A write is decided against the jail (race-free parent directory), the executable rules (extension,
content, existing exec bit), the protected paths, and the file's current state; then the content
goes to a temp file in the same directory, is fsynced, and lands in one atomic step:

* new file:  ``link(temp, name)`` — fails with EEXIST if anything (even a dangling symlink) is
  there, so ``overwrite: false`` has no check-then-create window;
* replace:   the old file is locked (flock), re-checked to still be the file at that name, hashed
  against ``expectedSha256``, copied to the history store, and ``rename(temp, name)`` replaces it.

The directory is fsynced afterwards. A reader sees the old file or the new one, never a mix.

Concurrent writers of one file take turns rather than fail: this server's writers queue on an
in-process lock per file, other processes' on the file's flock, for up to ``BUSY_WAIT_S`` before
``FILE_BUSY``; ``expectedSha256`` still decides conflicts. Every temp file is journaled (see
:mod:`mcp_server_guard.files.journal`) so that one left by a killed writer is removed at the next start.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import logging
import os
import posixpath
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_server_guard import audit, faults
from mcp_server_guard.errors import HostError, ResourceError, SecurityError
from mcp_server_guard.files.copying import carry_attributes
from mcp_server_guard.files.history import HistoryStore
from mcp_server_guard.files.history_entries import HistoryEntry
from mcp_server_guard.files.jail import Jail, Located, check_regular, oserror_to_guard
from mcp_server_guard.files.journal import TempJournal, Ticket, journal_dir, sweep_journals, temp_name
from mcp_server_guard.files.kept import note_bounds, noted_bounds
from mcp_server_guard.files.reading import sha256_fd
from mcp_server_guard.files.treelock import TreeBusy, flock_until, tree_lock
from mcp_server_guard.files.write_records import WriteRecords, WrittenDirs
from mcp_server_guard.policy import FileWritePolicy, Policy
from mcp_server_guard.protected import Protection, protection_for

log = logging.getLogger("mcp_server_guard")

_EXEC_BITS = stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH
# How long a write waits for other writers of the same file before FILE_BUSY.
BUSY_WAIT_S = 10.0


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@dataclass(frozen=True)
class WriteOutcome:
    path: str
    bytes_written: int
    sha256: str
    created: bool
    backup: str | None


class _FileLocks:
    """In-process locks per file (directory inode, name): this server's writers of one file take turns.

    The flock on the file itself cannot queue them: each write replaces the inode it would lock.
    """

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._locks: dict[tuple[int, int, str], tuple[threading.Lock, int]] = {}

    @contextlib.contextmanager
    def hold(self, key: tuple[int, int, str], timeout: float) -> Iterator[bool]:
        with self._mutex:
            lock, users = self._locks.get(key, (threading.Lock(), 0))
            self._locks[key] = (lock, users + 1)
        try:
            acquired = lock.acquire(timeout=max(timeout, 0.0))
            try:
                yield acquired
            finally:
                if acquired:
                    lock.release()
        finally:
            with self._mutex:
                lock, users = self._locks[key]
                if users == 1:
                    del self._locks[key]
                else:
                    self._locks[key] = (lock, users - 1)


class Writer(WriteRecords):
    """Everything file_write (and ``mcp-guard history restore``) does, behind the guards."""

    def __init__(
        self,
        jail: Jail,
        policy: FileWritePolicy,
        protection: Protection,
        history: HistoryStore,
        journal: TempJournal | None = None,
    ) -> None:
        self.jail = jail
        self.policy = policy
        self.protection = protection
        self.history = history
        self.journal = journal
        # (root, path) -> whether git has a copy of the file as it is (the server's: ``changes.git_index``); an
        # overwrite of one it has not keeps the one copy of that work in the history, never evicted unasked.
        self.backed: Callable[[str, str], bool] = lambda root, path: True
        self._landed: dict[str, tuple[int, ...]] = {}  # path -> identity of what this writer last wrote there
        self._dirs: dict[str, WrittenDirs] = {}  # audit id -> the directories its write made and whose time it moved
        self._new_mode = 0o666 & ~_current_umask() & ~_EXEC_BITS
        self._files = _FileLocks()

    def close(self) -> None:
        """At a clean exit (no write in flight): drop the temp-file journal and the history's in-flight notes."""
        if self.journal is not None:
            self.journal.close()
        self.history.close()

    def write(
        self,
        given: str,
        data: bytes,
        *,
        overwrite: bool,
        expected_sha256: str | None = None,
        create_dirs: bool = False,
        sha256: str | None = None,
    ) -> WriteOutcome:
        """Write ``data`` at ``given`` behind every guard; ``sha256`` is the content's hash when already known."""
        if len(data) > self.policy.max_write_bytes:
            raise ResourceError(
                "CONTENT_TOO_LARGE",
                f"The content is {len(data)} bytes; the limit is {self.policy.max_write_bytes}.",
                "Write a smaller file, or split the content over several files.",
            )
        located = self.jail.locate(given)
        from mcp_server_guard.files.write_checks import check_executable_content  # noqa: PLC0415 - issue 44

        check_executable_content(posixpath.basename(located.rel), data, self.policy)
        self._check_protected(located, [located.rel, located.absolute], None)  # before createDirs makes anything
        deadline = time.monotonic() + BUSY_WAIT_S  # (one bound for every wait of this write: red team 101 B)
        located, dirfd, name, made = self._parent(located, create_dirs, deadline)
        digest = sha256 or hashlib.sha256(data).hexdigest()
        call = audit.current()
        try:
            st = os.fstat(dirfd)
            if call is not None:  # (before the temp file changes the directory's time)
                self._dirs[call.audit_id] = made or WrittenDirs([], self.jail.real_path_of(dirfd), st.st_mtime_ns)
            with self._files.hold((st.st_dev, st.st_ino, name), deadline - time.monotonic()) as turn:
                if not turn:
                    raise self._busy(located)
                while True:
                    outcome = self._attempt(located, dirfd, name, data, digest, overwrite, expected_sha256, deadline)
                    if outcome is not None:
                        return outcome
                    # Another process replaced or created the file between our look and our lock: decide again.
                    if time.monotonic() > deadline:
                        raise self._busy(located)
                    time.sleep(0.002)
        finally:
            os.close(dirfd)
            if call is not None:
                self._dirs.pop(call.audit_id, None)

    def _attempt(
        self,
        located: Located,
        dirfd: int,
        name: str,
        data: bytes,
        digest: str,
        overwrite: bool,
        expected_sha256: str | None,
        deadline: float,
    ) -> WriteOutcome | None:
        existing = self._existing(located, dirfd, name)
        if existing is None:
            if expected_sha256 is not None:
                raise ResourceError(
                    "CONFLICT",
                    f"'{located.given}' does not exist, but expectedSha256 says it should.",
                    "Re-read the directory; create the file without expectedSha256.",
                )
            return self._create(located, dirfd, name, data, digest, deadline)
        if not overwrite:
            raise ResourceError(
                "FILE_EXISTS",
                f"'{located.given}' already exists.",
                "Pass overwrite: true to replace it (its previous content is kept in the history).",
            )
        return self._replace(located, dirfd, name, data, digest, expected_sha256, deadline)

    @staticmethod
    def _busy(located: Located) -> ResourceError:
        return ResourceError(
            "FILE_BUSY",
            f"'{located.given}' was held by other writers for {BUSY_WAIT_S:.0f} s.",
            "Try again in a moment.",
        )

    # -- checks ---------------------------------------------------------------------------------

    def _existing(self, located: Located, dirfd: int, name: str) -> os.stat_result | None:
        try:
            st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        except OSError as exc:
            raise oserror_to_guard(exc, located.given) from None
        real_dir = self.jail.real_path_of(dirfd)
        real = posixpath.join(real_dir, name) if real_dir else ""
        self._check_protected(located, [located.rel, located.absolute, real], st)
        if st is None:
            return None
        if stat.S_ISLNK(st.st_mode):
            # Defense in depth: writing "through" a symlink (dangling ones included) is the classic escape.
            raise SecurityError(
                "SYMLINK_TARGET",
                f"'{located.given}' is a symlink; file_write never writes through one.",
                "Write to the real file's path instead.",
            )
        check_regular(st, located.given)
        self._check_not_executable(st, located.given)
        return st

    def _check_protected(self, located: Located, candidates: list[str], st: os.stat_result | None) -> None:
        from mcp_server_guard.git_dirs import makes_git_dir  # noqa: PLC0415 - with the first write (issue 44)

        roots = [root.path for root in self.jail.roots]
        rule = self.protection.write_rule(candidates, st, roots) or makes_git_dir(candidates[-1], roots)
        if rule is not None:
            raise SecurityError(
                "PROTECTED_PATH",
                f"'{located.given}' is protected ({rule}).",
                "This file controls tools, shells or the guards themselves; ask the user to change it by hand.",
            )

    @staticmethod
    def _check_not_executable(st: os.stat_result, given: str) -> None:
        if st.st_mode & _EXEC_BITS:
            raise SecurityError(
                "EXECUTABLE_TARGET",
                f"'{given}' is executable (it has an exec bit).",
                "Executables are never replaced; ask the user to change it by hand.",
            )

    # -- the two atomic paths -------------------------------------------------------------------

    @contextlib.contextmanager
    def _temp(self, located: Located, dirfd: int, data: bytes, mode: int) -> Iterator[str]:
        """A fresh temp file in the target's directory holding ``data`` durably; gone again afterwards.

        The journal hears of it before it exists and after it is gone, so a crash in between leaves
        a temp file the next start removes.
        """
        for _ in range(8):
            tmp = temp_name()
            ticket = self.journal.add(dirfd, tmp) if self.journal is not None else None
            try:
                fd = os.open(
                    tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dirfd
                )
                break
            except FileExistsError:
                self._forget(ticket)
                continue
            except OSError as exc:
                self._forget(ticket)
                raise self._write_error(exc, located) from None
        else:
            raise HostError("IO_ERROR", "Could not create a temporary file.", "Try again.")
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fchmod(fd, mode)
                os.fsync(fd)
            except OSError as exc:
                raise self._write_error(exc, located) from None
            finally:
                os.close(fd)
            yield tmp
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dirfd)  # after a rename, already gone
            self._forget(ticket)

    def _forget(self, ticket: Ticket | None) -> None:
        if self.journal is not None:
            self.journal.done(ticket)

    def _parent(
        self, located: Located, create_dirs: bool, deadline: float
    ) -> tuple[Located, int, str, WrittenDirs | None]:
        """``jail.open_parent``; the directories createDirs makes, made holding the tree lock and said to the
        judgements running meanwhile (``treelock.tree_lock``), the taking counted even when the write then fails.

        Threat (red team 100 F2): ``shaped/refs/heads/`` made by a file_write while a command's change set holding
        ``shaped/HEAD``, ``shaped/objects`` and a ``shaped/config`` that runs a program was judged; the write then
        failed, no taking was counted, and the config landed in what had become a git dir."""
        try:
            return (*self.jail.open_parent(located), None)
        except ResourceError as exc:
            if not (create_dirs and exc.code == "NOT_FOUND"):
                raise
        device = os.fstat(located.root.fd).st_dev
        try:
            with tree_lock([device], max(0.0, deadline - time.monotonic()), wrote=lambda: _missing(located)):
                self._check_protected(located, [located.rel, located.absolute], None)  # (the tree as it is now)
                made = _missing(located)  # (for the record: what its undo takes away, and the time it puts back)
                top, before = (posixpath.dirname(made[0]) if made else ""), 0
                with contextlib.suppress(OSError):
                    before = os.lstat(top).st_mtime_ns if top else 0
                written = WrittenDirs(made, top, before) if made and before else None
                return (*self.jail.open_parent(located, create_dirs=True), written)
        except TreeBusy:
            raise self._busy(located) from None

    @contextlib.contextmanager
    def _landing(self, located: Located, dirfd: int, name: str, deadline: float) -> Iterator[None]:
        """The moment the new content takes the name: checked again and done with no other server's apply or
        write in between (files.treelock). Only this step holds the lock, not the data's write nor the history's
        copy, so a writer frozen mid-write never holds up the other servers."""
        st = os.fstat(dirfd)
        real: list[str] = []

        def wrote() -> list[str]:  # (said to judgements running meanwhile: ``treelock.tree_lock``)
            real.append(posixpath.join(self.jail.real_path_of(dirfd), name))
            return real

        try:
            with tree_lock([st.st_dev], max(0.0, deadline - time.monotonic()), wrote=wrote):
                self._check_protected(located, [located.rel, located.absolute, real[0]], None)
                yield
        except TreeBusy:
            raise self._busy(located) from None

    def _create(
        self, located: Located, dirfd: int, name: str, data: bytes, digest: str, deadline: float
    ) -> WriteOutcome | None:
        from mcp_server_guard.files.write_checks import check_hook_keys  # noqa: PLC0415 - with the first write (issue 44)

        record: tuple[str, dict[str, Any]] | None = None
        check_hook_keys(located, None, data, dirfd)
        with self._temp(located, dirfd, data, self._new_mode) as tmp:
            try:
                # link() never replaces: an existing name (file, dir, or dangling symlink) fails with EEXIST.
                with self._landing(located, dirfd, name, deadline):
                    record = self._record(located, dirfd, tmp, name, "create", "", digest)
                    faults.point(f"write {name}")
                    os.link(tmp, name, src_dir_fd=dirfd, dst_dir_fd=dirfd, follow_symlinks=False)
            except FileExistsError:
                self._drop_record(record)
                return None  # someone created it meanwhile: decide again
            except OSError as exc:
                self._drop_record(record)
                raise self._write_error(exc, located) from None
        os.fsync(dirfd)
        self._complete_record(record)
        return WriteOutcome(self.jail.display(located), len(data), digest, True, None)

    @staticmethod
    def _lock(fd: int, located: Located, deadline: float) -> None:
        if not flock_until(fd, deadline, 0.002):
            raise ResourceError(
                "FILE_BUSY",
                f"'{located.given}' is locked by another writer (waited {BUSY_WAIT_S:.0f} s).",
                "Try again in a moment.",
            )

    def _replace(
        self,
        located: Located,
        dirfd: int,
        name: str,
        data: bytes,
        digest: str,
        expected_sha256: str | None,
        deadline: float,
    ) -> WriteOutcome | None:
        from mcp_server_guard import hook_configs as hooks  # noqa: PLC0415 - with the first write (issue 44)
        from mcp_server_guard.files.write_checks import check_hook_keys  # noqa: PLC0415 - (the same)

        try:
            old = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dirfd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return None  # became a symlink: _existing refuses it on the next attempt
            raise oserror_to_guard(exc, located.given) from None
        try:
            # One lock order for every writer (the tree lock, then a file's; never the tree lock waited for while a
            # file's is held): the previous content is copied under the file's lock alone, which then goes; the
            # rename takes the tree lock, then the file's again, and lands only if the file is still as copied.
            self._lock(old, located, deadline)
            st = os.fstat(old)
            if not self._still(dirfd, name, st):
                # Replaced between our open and our lock: its content is not what we locked.
                if expected_sha256 is not None:
                    raise self._conflict(located, None)
                return None
            check_regular(st, located.given)
            self._check_not_executable(st, located.given)
            judged = (hooks.judged_package_json(located.rel) or hooks.judged_manifest(located.rel)
                      or hooks.installer_manifest(located.rel) or hooks.attributes_file(located.rel))  # fmt: skip
            limit = hooks.installer_limit(located.rel)
            check_hook_keys(located, os.pread(old, limit, 0) if judged else None, data, dirfd)
            current = sha256_fd(old) if expected_sha256 is not None or st.st_size == len(data) else ""
            if expected_sha256 is not None and current != expected_sha256.lower():
                raise self._conflict(located, current)
            if current == digest:
                # The file holds these bytes already: nothing to write, and no second history entry of the same.
                return WriteOutcome(self.jail.display(located), 0, digest, False, None)
            entry_id = self.history.new_id()
            # The writer's own output, as it left it, is no one's only copy (a model rewriting a file over and over).
            mine = self._landed.get(posixpath.join(self.jail.real_path_of(dirfd), name))
            only = mine != (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size) and not self.backed(
                located.root.path, located.rel
            )
            # Kept whole where the history shares the file's file system and the file has no other name (a new name
            # of it, made under the tree lock by _land); else copied now, under the file's lock alone (other names
            # could change it; no copy holds the tree lock). Pinned until the write has landed: no eviction takes it.
            link = st.st_nlink == 1 and self._history_device() == st.st_dev
            with self.history.pinned(entry_id):
                backup = None if link else self._save_previous(old, located, dirfd, name, st, entry_id, link=False)
                fcntl.flock(old, fcntl.LOCK_UN)
                if not self._land(located, dirfd, name, data, digest, st, old, (entry_id, backup), deadline, only):
                    return None
        finally:
            os.close(old)
        return WriteOutcome(self.jail.display(located), len(data), digest, False, entry_id)

    def _history_device(self) -> int:
        """The device of the history store (of where it will be made: it is made at its first entry)."""
        for place in (self.history.directory, *self.history.directory.parents):
            with contextlib.suppress(OSError):
                return os.stat(place).st_dev
        return -1

    def _land(
        self,
        located: Located,
        dirfd: int,
        name: str,
        data: bytes,
        digest: str,
        st: os.stat_result,
        old: int,
        kept: tuple[str, HistoryEntry | None],
        deadline: float,
        only: bool = False,
    ) -> bool:
        """The new content takes the name, the file still as its backup was copied (``kept``: the entry's id, and
        the copy; None: it is kept now, whole) (False: it changed meanwhile, decide again)."""
        entry_id, backup = kept
        with self._temp(located, dirfd, data, st.st_mode & 0o0666) as tmp:
            carry_attributes(old, dirfd, tmp)
            try:
                with self._landing(located, dirfd, name, deadline):
                    self._lock(old, located, deadline)
                    if not self._still(dirfd, name, st, exact=True):
                        if backup is not None:
                            self.history.forget(entry_id)  # changed since it was copied: decide again
                        return False
                    if backup is None:
                        self._save_previous(old, located, dirfd, name, st, entry_id, link=True)
                    try:
                        record = self._record(located, dirfd, tmp, name, "modify", entry_id, digest, only, st)
                    except BaseException:
                        self.history.forget(entry_id)  # (no record will name it)
                        raise
                    faults.point(f"write {name}")
                    try:
                        os.rename(tmp, name, src_dir_fd=dirfd, dst_dir_fd=dirfd)
                    except OSError:
                        self._drop_record(record)
                        self.history.forget(entry_id)
                        raise
            except OSError as exc:
                raise self._write_error(exc, located) from None
        os.fsync(dirfd)
        self._complete_record(record)
        return True

    @staticmethod
    def _still(dirfd: int, name: str, st: os.stat_result, *, exact: bool = False) -> bool:
        """Whether ``name`` still is the file ``st`` describes (``exact``: not changed since, either)."""
        try:
            now = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            return False
        return not exact or (now.st_size, now.st_mtime_ns, now.st_ctime_ns) == (st.st_size, st.st_mtime_ns,
                                                                                st.st_ctime_ns)  # fmt: skip

    @staticmethod
    def _conflict(located: Located, current: str | None) -> ResourceError:
        now = f" (its sha256 is now {current})" if current else ""
        return ResourceError(
            "CONFLICT",
            f"'{located.given}' changed since it was read{now}; nothing was written.",
            "Read the file again, merge your change into its current content, and retry with the new sha256.",
        )


__all__ = ["WriteOutcome", "Writer", "open_writer"]


def open_writer(
    jail: Jail,
    policy: Policy,
    audit_path: Path,
    history_dir: Path,
    *,
    serving: bool = True,
    protection: Protection | None = None,
) -> Writer:
    """The one writer set-up (the servers' and `mcp-guard history restore`'s): the policy file, the audit log and
    the history store protected; what dead writers left (temp files, orphan history data) cleaned. ``serving``: a
    server's, which notes its history bounds in the store (``HistoryStore.note_bounds``); else the store keeps the
    bounds a server noted. ``protection``: the server's own, already made with these files (shell_exec's, which
    protects its approvals file besides); by default one is made here."""
    write_policy = policy.file_write
    if protection is None:
        protection = protection_for(policy, audit_path=audit_path, history_dir=history_dir)
    bounds = write_policy.history_max_bytes, write_policy.history_max_entries
    if serving:
        note_bounds(history_dir, *bounds)
    history = HistoryStore(history_dir, *(bounds if serving else noted_bounds(history_dir, *bounds)))
    journal: TempJournal | None = None
    try:
        removed = sweep_journals(journal_dir(history_dir))
        orphans = history.sweep()
        if removed or orphans:
            log.info("removed %d temp file(s) and %d orphan history file(s) left by dead writers", removed, orphans)
        journal = TempJournal(journal_dir(history_dir))
    except OSError as exc:
        # Overwrites will say what is wrong with the store (HISTORY_UNAVAILABLE); new files can still be written.
        log.warning("cannot prepare the history store %s: %s", history_dir, exc.strerror or exc)
    return Writer(jail, write_policy, protection, history, journal)


def _missing(located: Located) -> list[str] | None:
    """The real paths of the directories createDirs makes for ``located`` (held: no writer of ours meanwhile);
    None ("anything") where a link or something odd on the way would have them made elsewhere."""
    parts = [part for part in posixpath.dirname(located.rel).split("/") if part not in ("", ".")]
    made: list[str] = []
    for depth in range(1, len(parts) + 1):
        path = posixpath.join(located.root.path, *parts[:depth])
        if parts[depth - 1] == "..":
            return None
        if not made:
            try:
                if stat.S_ISDIR(os.lstat(path).st_mode):
                    continue
                return None  # (a link or a file on the way)
            except FileNotFoundError:
                pass
            except OSError:
                return None
        made.append(path)
    return made
