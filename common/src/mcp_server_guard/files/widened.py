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
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from mcp_server_guard import faults
from mcp_server_guard.files import openat2 as _openat2
from mcp_server_guard.paths import private_dirs, within_any

__all__ = ["PutBack", "forget", "keep_in", "narrow", "put_back", "settle", "widen"]

log = logging.getLogger("mcp_server_guard.files.widened")
_RESOLVE = _openat2.RESOLVE_BENEATH | _openat2.RESOLVE_NO_SYMLINKS | _openat2.RESOLVE_NO_MAGICLINKS


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


@contextlib.contextmanager
def _serialized(directory: Path) -> Iterator[None]:
    """One widening, narrowing or start's put-back at a time, across this machine's servers and threads: each sees
    the others' live notes whole (a note is made and locked within this)."""
    lock = os.open(directory / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
    finally:
        os.close(lock)


def _live(directory: Path, dev: int, ino: int, mine: int = -1) -> list[tuple[Path, dict[str, Any]]]:
    """The notes of the inode (dev, ino) that a live step holds (but ``mine``, a note's descriptor), oldest first."""
    found: list[tuple[float, Path, dict[str, Any]]] = []
    own = os.fstat(mine).st_ino if mine >= 0 else -1
    for path in directory.glob(f"*-{dev}-{ino}-*.json"):
        with contextlib.suppress(OSError, ValueError):
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            try:
                st = os.fstat(fd)
                if st.st_ino == own:
                    continue
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                    continue  # (nobody holds it: a dead server's, for the next start)
                except BlockingIOError:
                    found.append((st.st_mtime, path, json.loads(os.pread(fd, 1 << 16, 0))))
            finally:
                os.close(fd)
    return [(path, note) for _t, path, note in sorted(found, key=lambda item: item[0])]


def widen(handle: int, mode: int, to: int, after: Sequence[str] = ()) -> int:
    """Give the inode held by ``handle`` (an O_PATH descriptor) the bits ``to`` adds to ``mode``, noted first: the
    note's descriptor (-1: none kept), for :func:`narrow`. ``after``: the paths it may have when the step is done (a
    rename). Where another live step let it in already (a read of one call beside the apply of another: red team 66
    F1), its note's mode is the one to put back, and the last of them puts it back."""
    directory = _where.directory
    with contextlib.suppress(OSError):
        if directory is not None:
            private_dirs(directory)
    if directory is None or not directory.is_dir():  # (no history yet: nothing to note it in)
        os.chmod(f"/proc/self/fd/{handle}", to)
        faults.point(f"widened {to:o}")
        return -1
    note = -1
    with _serialized(directory):
        st = os.fstat(handle)
        live = _live(directory, st.st_dev, st.st_ino)
        original = int(live[0][1]["mode"]) if live else mode
        target = stat.S_IMODE(st.st_mode) | (to & ~mode)
        paths = [p for p in [_path_of(handle), *after] if p]
        with contextlib.suppress(OSError):
            name = f"{os.getpid()}-{st.st_dev}-{st.st_ino}-{os.urandom(4).hex()}.json"
            note = os.open(directory / name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            fcntl.flock(note, fcntl.LOCK_EX)
            was = live[0][1] if live else {"size": st.st_size, "mtime": st.st_mtime_ns, "ctime": st.st_ctime_ns}
            os.write(note, json.dumps({"paths": paths, "dev": st.st_dev, "ino": st.st_ino, "mode": original,
                                       "to": target, "size": was["size"], "mtime": was["mtime"],
                                       "ctime": was["ctime"]}).encode())  # fmt: skip
            for path, other in live:  # (what the inode is given now, for whichever of them puts it back)
                path.write_text(json.dumps({**other, "to": target}), encoding="utf-8")
        try:
            os.chmod(f"/proc/self/fd/{handle}", target)
        except BaseException:
            _forget(note)
            raise
    faults.point(f"widened {target:o}")
    return note


def narrow(handle: int, mode: int, note: int) -> bool:
    """Put back the mode of the inode ``handle`` holds (``mode``, or as its note says), and let the note go. Not
    where another live step still has it let in (that one puts it back), nor where someone else set its mode
    meanwhile (theirs stays: red team 66 F2). Whether it was put back."""
    directory = _where.directory
    if note < 0 or directory is None:
        os.chmod(f"/proc/self/fd/{handle}", mode)
        return True
    try:
        with _serialized(directory):
            mine = json.loads(os.pread(note, 1 << 16, 0))
            st = os.fstat(handle)
            if _live(directory, st.st_dev, st.st_ino, note) or stat.S_IMODE(st.st_mode) != int(mine["to"]):
                return False
            os.chmod(f"/proc/self/fd/{handle}", int(mine["mode"]))
            return True
    finally:
        _forget(note)


def settle(handle: int, note: int, mode: int) -> bool:
    """The inode ``handle`` holds was given ``mode`` on purpose while let in: it is let in again on top of that
    (the bits its note gave), and ``mode`` is what is put back at the end (or by a start). Whether it was."""
    directory = _where.directory
    if directory is None:
        return False
    with _serialized(directory):
        mine = json.loads(os.pread(note, 1 << 16, 0))
        to = mode | (int(mine["to"]) & ~int(mine["mode"]))
        os.chmod(f"/proc/self/fd/{handle}", to)
        data = json.dumps({**mine, "mode": mode, "to": to}).encode()
        os.ftruncate(note, 0)
        os.pwrite(note, data, 0)
    return True


def forget(note: int) -> None:
    """Let the note go without putting the mode back (a step set the entry's mode on purpose since)."""
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
    if not directory.is_dir():
        return 0
    done = 0
    with _serialized(directory):
        for path in sorted(directory.glob("*.json")):
            with contextlib.suppress(OSError):
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # (held: its process lives, its step runs)
                    done += _put_back(fd, directory, within, looked)
                    os.unlink(path)
                finally:
                    os.close(fd)
    return done


def _beneath(path: str, within: Sequence[str]) -> int:
    """An O_PATH descriptor of ``path`` reached beneath the one of ``within`` that holds it with no link followed on
    the way (the jail's walk: a directory of the path swapped for a symlink since leads nowhere); -1 when it lies in
    none of them (a note someone forged names nothing else)."""
    for top in within:
        if not within_any(path, [top]):
            continue
        if not _openat2.available():
            return os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
        root = os.open(top, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            return _openat2.openat2(
                root, os.path.relpath(path, top), os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, _RESOLVE
            )
        finally:
            os.close(root)
    return -1


def _put_back(fd: int, directory: Path, within: Sequence[str], looked: PutBack | None) -> int:
    try:
        note = json.loads(os.pread(fd, 1 << 16, 0) or b"{}")
        paths, dev, ino, mode, to = (
            note["paths"],
            int(note["dev"]),
            int(note["ino"]),
            int(note["mode"]),
            int(note["to"]),
        )
    except (ValueError, KeyError, TypeError):
        return 0  # (not a note of ours)
    if _live(directory, dev, ino, fd):
        return 0  # (a live step has it let in too: that one puts it back)
    for path in paths:
        with contextlib.suppress(OSError):
            held = _beneath(os.path.normpath(str(path)), within)
            if held < 0:
                continue
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
