"""A journal of the temp files a writer has in flight, so that a writer killed mid-write leaves nothing behind.

file_write stages content in a temp file beside the target (``.mcp-guard-<hex>.tmp``: same directory,
so the final rename is atomic). Killed before the rename, the writer would leave that file — as big as
the content — in the user's project. So before creating one, the writer appends ``+`` (the directory's
path, device and inode, and the temp name) to its own journal, kept outside the jail beside the history
store, and ``-`` once the temp name is gone.

Each writer holds an exclusive ``flock`` on its journal for as long as it lives; the kernel drops it
when the process dies, however it dies, and pid reuse cannot fool it. At start-up, :func:`sweep_journals`
takes every journal whose lock it can get — a dead writer's — removes the temp files still listed there
(only names of our pattern, only in the very directory recorded, checked by device and inode through an
``O_NOFOLLOW`` directory fd, only regular files), and drops the journal. A live writer's journal stays
locked, so several servers may share the directory and never touch each other's temp files.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import secrets
import stat
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from mcp_server_guard.paths import private_dirs
from mcp_server_guard.patterns import deferred

log = logging.getLogger("mcp_server_guard.files.journal")

TEMP_NAME = deferred(r"^\.mcp-guard-[0-9a-f]{12}\.tmp$")
_JOURNAL = deferred(r"^\d+-[0-9a-f]{8}\.journal$")
_STARTING = deferred(r"^\.starting-\d+-[0-9a-f]{8}$")
_STALE_START_S = 60.0


def journal_dir(history_dir: Path) -> Path:
    """Where writers journal their temp files: inside the history store, outside the jail, protected like it."""
    return history_dir / ".journal"


def temp_name() -> str:
    """A fresh name for a temp file beside a target (matches :data:`TEMP_NAME`)."""
    return f".mcp-guard-{secrets.token_hex(6)}.tmp"


@dataclass(frozen=True)
class Ticket:
    """One temp file in the journal."""

    dev: int
    ino: int
    name: str


class TempJournal:
    """This process's journal: temp files it is about to create, until they are gone."""

    def __init__(self, directory: Path) -> None:
        private_dirs(directory)
        self.directory = directory
        tag = f"{os.getpid()}-{secrets.token_hex(4)}"
        # Locked before it gets a journal's name, so a sweeper never takes a live journal for a dead one.
        starting = directory / f".starting-{tag}"
        fd = os.open(starting, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            self.path = directory / f"{tag}.journal"
            os.rename(starting, self.path)
        except BaseException:
            os.close(fd)
            starting.unlink(missing_ok=True)
            raise
        self._fd: int | None = fd
        self._mutex = threading.Lock()
        self._pending = 0
        self._warned = False

    def add(self, dirfd: int, name: str) -> Ticket | None:
        """Note a temp file about to be created in ``dirfd``; None when the journal cannot be written."""
        try:
            st = os.fstat(dirfd)
            directory = os.readlink(f"/proc/self/fd/{dirfd}")
        except OSError:
            return None
        ticket = Ticket(st.st_dev, st.st_ino, name)
        line = {"op": "+", "dir": directory, "dev": ticket.dev, "ino": ticket.ino, "name": name}
        with self._mutex:
            if not self._append(line):
                return None
            self._pending += 1
        return ticket

    def done(self, ticket: Ticket | None) -> None:
        """The temp file is gone (renamed, linked and unlinked, or removed)."""
        if ticket is None:
            return
        with self._mutex:
            self._pending -= 1
            if self._pending == 0 and self._fd is not None:
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, 0)  # nothing in flight: start afresh, the journal stays small
                    return
            self._append({"op": "-", "dev": ticket.dev, "ino": ticket.ino, "name": ticket.name})

    def _append(self, line: dict[str, object]) -> bool:
        if self._fd is None:
            return False
        try:
            os.write(self._fd, (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8", "surrogateescape"))
        except OSError as exc:
            if not self._warned:
                self._warned = True
                log.warning(
                    "cannot write the temp-file journal %s (%s): a crash mid-write may leave a temp file behind",
                    self.path,
                    exc.strerror,
                )
            return False
        return True

    def close(self) -> None:
        """At a clean exit: drop the journal (nothing can be in flight any more)."""
        with self._mutex:
            if self._fd is None:
                return
            self.path.unlink(missing_ok=True)
            os.close(self._fd)
            self._fd = None


def _remove_temp(directory: str, dev: int, ino: int, name: str) -> bool:
    # Defense in depth: only our own temp names, in the very directory recorded (a directory swapped for a
    # symlink or another one fails the device/inode check), never through a symlink, only regular files.
    if not TEMP_NAME.match(name):
        return False
    try:
        dirfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        st = os.fstat(dirfd)
        if (st.st_dev, st.st_ino) != (dev, ino):
            return False
        try:
            st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
        except OSError:
            return False
        if not stat.S_ISREG(st.st_mode):
            return False
        os.unlink(name, dir_fd=dirfd)
        return True
    except OSError:
        return False
    finally:
        os.close(dirfd)


def _leftovers(text: str) -> dict[tuple[int, int, str], str]:
    """Temp files added and not done in a journal's text: (dev, ino, name) -> directory."""
    pending: dict[tuple[int, int, str], str] = {}
    for line in text.splitlines():
        try:
            entry = json.loads(line)
            key = (int(entry["dev"]), int(entry["ino"]), str(entry["name"]))
        except (ValueError, KeyError, TypeError):
            continue  # a torn line: its temp file was never created
        if entry.get("op") == "+" and isinstance(entry.get("dir"), str):
            pending[key] = entry["dir"]
        elif entry.get("op") == "-":
            pending.pop(key, None)
    return pending


def sweep_journals(directory: Path) -> int:
    """Remove the temp files dead writers left behind (see the module doc); returns how many were removed."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return 0
    removed = 0
    for name in names:
        journal = _JOURNAL.match(name) is not None
        if not journal and not _STARTING.match(name):
            continue
        path = directory / name
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # its writer is alive: never touch its temp files
            if journal:
                with os.fdopen(os.dup(fd), "rb") as fh:
                    text = fh.read().decode("utf-8", "surrogateescape")
                for (dev, ino, temp), where in _leftovers(text).items():
                    if _remove_temp(where, dev, ino, temp):
                        removed += 1
                        log.info("removed a temp file a dead writer left: %s/%s", where, temp)
                path.unlink(missing_ok=True)
            elif os.fstat(fd).st_mtime < time.time() - _STALE_START_S:
                path.unlink(missing_ok=True)  # a writer that died while starting
        except OSError as exc:
            log.warning("cannot sweep the temp-file journal %s: %s", path, exc.strerror)
        finally:
            os.close(fd)
    return removed


__all__ = ["TEMP_NAME", "TempJournal", "Ticket", "journal_dir", "sweep_journals", "temp_name"]
