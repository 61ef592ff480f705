"""Directories a live server owns, told from a dead server's by a lock the kernel drops however it dies.

Several servers may share one state directory (one per host window, one per tool). Each keeps what only it
uses — its copies (``changes.area``), its output spools (shell_exec), the history saves it has in flight —
in an :class:`OwnedDir` of its own, ``<area>/<pid>-<random>``, and holds an exclusive ``flock`` on the
``lock`` file in it for as long as it lives. The lock is taken before the directory gets its name (it is made
as ``.starting-<pid>-<random>`` and renamed once locked), so a sweeper never takes a live server's directory
for a dead one's. A directory whose lock can be taken is a dead server's: :func:`dead_dirs` hands it over with
the lock held, and what the dead server left can go at once — not after an age, and not by a guess from a pid
(pids are reused; a server of another user or a container may have the same one).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

from mcp_server_guard.audit import pid_alive
from mcp_server_guard.paths import private_dirs
from mcp_server_guard.patterns import deferred

__all__ = ["LOCK", "PART_NAME", "OwnedDir", "dead_dirs", "live_dirs", "plain_dir"]

LOCK = "lock"
_NAME = deferred(r"^(?:\.starting-)?\d+-[0-9a-f]{8}$")
PART_NAME = deferred(r"^\d+-[0-9a-f]{8}$")  # a live or dead server's directory, once taken


class OwnedDir:
    """This process's directory in ``area``, locked for as long as the process (or :meth:`close`) lets it."""

    def __init__(self, area: Path) -> None:
        private_dirs(area)
        if not plain_dir(area):
            raise OSError(errno.ENOTDIR, f"{area} is not a plain directory of this user (a symlink?)")
        tag = f"{os.getpid()}-{secrets.token_hex(4)}"
        starting = area / f".starting-{tag}"
        starting.mkdir(mode=0o700)
        try:
            fd = os.open(starting / LOCK, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except BaseException:
            starting.rmdir()
            raise
        fcntl.flock(fd, fcntl.LOCK_EX)
        self.path = area / tag
        try:
            os.rename(starting, self.path)
        except BaseException:
            os.close(fd)
            raise
        self._fd: int | None = fd

    def close(self) -> None:
        """Let go of the lock (the directory then reads as a dead server's: remove what must go first)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def dead_dirs(area: Path, *, unlocked_legacy: bool = False) -> Iterator[tuple[Path, int]]:
    """The directories of ``area`` whose server is gone, each with its lock held (the caller closes the fd; -1
    for a server that died before its lock existed). Names not of our pattern are never touched.

    ``unlocked_legacy``: a directory of our pattern without a lock file was made by a version that took none
    (output spools before they were locked); it is taken for dead when its pid is not a live process — the only
    place a pid decides, for what those versions left, since they left nothing better to go by."""
    if not plain_dir(area):
        return  # Threat: an area made a symlink: its clean-up would run wherever it points
    try:
        names = os.listdir(area)
    except OSError:
        return
    for name in names:
        if not _NAME.match(name):
            continue
        owned = area / name
        if not plain_dir(owned):
            continue  # a symlink or a file of our pattern: not a directory of ours
        try:
            fd = os.open(owned / LOCK, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError:
            if name.startswith(".starting-"):
                fd = -1  # a server that died while taking it: nothing of its work can be in it
            elif unlocked_legacy and not pid_alive(int(name.split("-", 1)[0])):
                fd = -1
            else:
                continue  # not ours to judge (made by hand, or by an older version)
        except OSError:
            continue
        if fd >= 0:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue  # its server is alive
            except OSError:
                os.close(fd)
                continue
        yield owned, fd


def live_dirs(area: Path) -> list[Path]:
    """The directories of ``area`` whose server is alive now (its lock is held)."""
    live: list[Path] = []
    if not plain_dir(area):
        return live
    with contextlib.suppress(OSError):
        for name in os.listdir(area):
            if not _NAME.match(name) or name.startswith(".starting-"):
                continue
            try:
                fd = os.open(area / name / LOCK, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                live.append(area / name)
            except OSError:
                pass
            finally:
                os.close(fd)
    return live


def plain_dir(path: Path) -> bool:
    """A directory of this user, itself (not a symlink to one)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid()
