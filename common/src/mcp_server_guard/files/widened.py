"""Owner permission bits widened for one step, noted on disk until they are put back.

A file or directory of this user's that they may not read or write (mode 000, a 0555 tree) is given the owner bits
a step needs, and its mode is put back right after (``copying.open_as_owner``, ``copying.owner_writes``,
``trees.open_own_dir``). A server killed in between (kill -9, the OOM killer) left the bits widened — in the project,
in a command's copy that then landed so, or in the history that an undo then put back so (red team 64 F2). Each
widening is now noted first in a file of its own (the entry's paths, its inode, the mode to put back, the mode
given), held under an flock while the step runs; the next start puts back the mode of every entry whose note no
live process holds, where that very inode still has the mode it was given (``put_back``).

The notes are not fsynced: they outlive a killed process, not a machine that loses power.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path

from mcp_server_guard import faults

__all__ = ["PutBack", "keep_in", "narrow", "put_back", "widen"]

log = logging.getLogger("mcp_server_guard.files.widened")


class _Where:
    """The directory the notes go to (``keep_in``: a history store's), once a process has one."""

    def __init__(self) -> None:
        self.directory: Path | None = None


_where = _Where()


def keep_in(directory: Path) -> None:
    _where.directory = directory


def _path_of(handle: int) -> str:
    with contextlib.suppress(OSError):
        found = os.readlink(f"/proc/self/fd/{handle}")
        if found.startswith("/") and not found.endswith(" (deleted)"):
            return found
    return ""


def widen(handle: int, mode: int, to: int, after: Sequence[str] = ()) -> int:
    """Give the inode held by ``handle`` (an O_PATH descriptor) the mode ``to``, noted first: the note's descriptor
    (-1: none kept), for :func:`narrow`. ``after``: the paths it may have when the step is done (a rename)."""
    note = -1
    if (directory := _where.directory) is not None:
        st = os.fstat(handle)
        paths = [p for p in [_path_of(handle), *after] if p]
        with contextlib.suppress(OSError):
            directory.mkdir(mode=0o700, exist_ok=True)
            name = f"{os.getpid()}-{st.st_dev}-{st.st_ino}-{os.urandom(4).hex()}.json"
            note = os.open(directory / name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            fcntl.flock(note, fcntl.LOCK_EX)
            os.write(note, json.dumps({"paths": paths, "dev": st.st_dev, "ino": st.st_ino, "mode": mode, "to": to,
                                       "size": st.st_size, "mtime": st.st_mtime_ns, "ctime": st.st_ctime_ns,
                                       "dir": stat.S_ISDIR(st.st_mode)}).encode())  # fmt: skip
    try:
        os.chmod(f"/proc/self/fd/{handle}", to)
    except BaseException:
        _forget(note)
        raise
    faults.point(f"widened {to:o}")
    return note


def narrow(handle: int, mode: int, note: int) -> None:
    """Put back the mode ``mode`` of the inode ``handle`` holds, and let its note go."""
    try:
        os.chmod(f"/proc/self/fd/{handle}", mode)
    finally:
        _forget(note)


def _forget(note: int) -> None:
    if note < 0:
        return
    with contextlib.suppress(OSError):
        os.unlink(os.readlink(f"/proc/self/fd/{note}"))
    os.close(note)


# What a note said an entry was before it was widened: (dev, ino, mode, size, mtime, ctime); and what it is now.
PutBack = Callable[[tuple[int, int, int, int, int, int], os.stat_result], None]


def put_back(within: Sequence[str], looked: PutBack | None = None) -> int:
    """At a start: the modes noted by processes gone put back (see the module's doc), on entries ``within`` these
    directories only (a server's roots, its copies' area, its history: a note someone forged names nothing else);
    how many. ``looked`` is told each (what it was, what it is now): only its ctime moved, by our own hand."""
    directory = _where.directory
    if directory is None:
        return 0
    done, names = 0, []
    with contextlib.suppress(OSError):
        names = sorted(os.listdir(directory))
    for name in names:
        with contextlib.suppress(OSError):
            fd = os.open(directory / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # (held: its process lives, its step runs)
                done += _put_back(os.read(fd, 1 << 16), within, looked)
                os.unlink(directory / name)
            finally:
                os.close(fd)
    return done


def _put_back(raw: bytes, within: Sequence[str], looked: PutBack | None) -> int:
    try:
        note = json.loads(raw or b"{}")
        paths, dev, ino, mode, to = (
            note["paths"],
            int(note["dev"]),
            int(note["ino"]),
            int(note["mode"]),
            int(note["to"]),
        )
    except (ValueError, KeyError, TypeError):
        return 0  # (killed before its note was whole: it widened nothing yet)
    inside = [os.path.normpath(w).rstrip("/") + "/" for w in within]
    for path in paths:
        if not any(os.path.normpath(str(path)).startswith(w) for w in inside):
            continue
        with contextlib.suppress(OSError):
            held = os.open(str(path), os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                st = os.fstat(held)
                # Only that very inode, and only while it has the mode it was given: a mode someone set since stays.
                if (
                    (st.st_dev, st.st_ino) == (dev, ino)
                    and stat.S_IMODE(st.st_mode) == to
                    and not stat.S_ISLNK(st.st_mode)
                ):
                    os.chmod(f"/proc/self/fd/{held}", mode)
                    log.warning("put back the mode %o of %s (a server stopped while it was widened)", mode, path)
                    if looked is not None and {"size", "mtime", "ctime"} <= note.keys():
                        was = (dev, ino, mode, int(note["size"]), int(note["mtime"]), int(note["ctime"]))
                        looked(was, os.fstat(held))
                    return 1
            finally:
                os.close(held)
    return 0
