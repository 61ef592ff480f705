"""Names of files with several names that a call removed and made again in place: watched on the copy by the call's
init (inotify, ``IN_DELETE`` only), said at the call's end (``remade``).

A real file with several names (``h1``, ``h2``, ``d/h3`` one inode) shows on the copy as that one file until the
command changes it. A name of it removed and made again, not by a rename (``rm h1 && cp -p backup h1``, ``tar x``,
``git checkout`` rewriting files), leaves a file at ``h1`` that overlayfs does not mark either way: the server
cannot tell it from the file rewritten in place, which natively reaches every other name (red team 17 F1). The box's
rename helper says renames (``renames``); unlinks are left to the kernel (intercepting them would cost every ``rm``
~0.1 ms), so the init notes them here instead: before the command starts, an inotify watch on each directory of
the copy that the server found to hold such a file (``wire.CallRequest.linked``); at the call's end, every name
deleted there that holds a regular file with one name again is said (not in a directory that was moved or removed
meanwhile: its path names another one now). A directory past the bound, a lost event
(the queue overflowed) or no inotify at all: nothing is said, and the server judges those names by their bytes, as
before.

The watches are made by the init before the command starts (no capability needed: reading the directories) and
read by it after every process of the call is gone; the command never holds the descriptor (close-on-exec, and
the init is not dumpable). A path said is checked on the copy one name at a time, no link followed.

Standard library only (the in-box supervisor imports this).
"""

from __future__ import annotations

import contextlib
import os
import stat
import struct

from mcp_server_guard import linux
from mcp_server_guard.shell.sandbox.renames import lstat_from

__all__ = ["Watch", "remade", "watch"]

WATCHED_MAX = 4096  # directories watched at most in one call
_SAID_MAX = 10_000  # names said at most
_READ_MAX = 8 << 20  # bytes of events read at most
_IN_DELETE = 0x200
_IN_DELETE_SELF = 0x400
_IN_MOVE_SELF = 0x800
_IN_IGNORED = 0x8000
_IN_ONLYDIR = 0x01000000
_IN_DONT_FOLLOW = 0x02000000
_IN_ISDIR = 0x40000000
_IN_Q_OVERFLOW = 0x4000
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (the name follows, NUL-padded)


class Watch:
    """One call's watches: an inotify descriptor and the directory each watch is on."""

    def __init__(self, fd: int, dirs: dict[int, str]) -> None:
        self.fd = fd
        self.dirs = dirs

    def close(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1


def watch(directories: list[str]) -> Watch | None:
    """Watch ``directories`` (absolute paths on the call's view) for deletions; None when inotify is not there or
    none can be watched. A directory that is gone, or not one, is skipped; past ``WATCHED_MAX`` the rest too."""
    if not directories:
        return None
    try:
        fd = linux.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, AttributeError):
        return None
    dirs: dict[int, str] = {}
    for directory in directories[:WATCHED_MAX]:
        try:
            wd = linux.inotify_add_watch(
                fd, directory, _IN_DELETE | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_ONLYDIR | _IN_DONT_FOLLOW
            )
        except OSError:
            continue
        dirs[wd] = directory.rstrip("/") or "/"
    if not dirs:
        os.close(fd)
        return None
    return Watch(fd, dirs)


def remade(
    found: Watch | None, view: int, linked: dict[str, str] | None = None
) -> tuple[list[str], list[tuple[str, str]]]:
    """Once every process of the call is gone: each name deleted in a watched directory that holds a regular file
    with one name again, looked at from ``view`` (the root of the call's mount namespace) without following a link;
    and apart, those the call linked there to a file with several names (``linked``: ``renames.linked``, the name ->
    where it was linked from), with their source: ``rm h1 && ln h2 h1 && rm h2`` leaves the real file itself there,
    with one name on the copy, which the server tells by the source's real file. Nothing when an event was lost.
    The watch is closed."""
    linked = linked or {}
    if found is None:
        return [], []
    deleted: dict[str, int] = {}
    moved: set[int] = set()  # watched directories moved or removed: their path names another one now, or none
    try:
        read = 0
        while read < _READ_MAX:
            try:
                data = os.read(found.fd, 1 << 16)
            except BlockingIOError:
                break
            if not data:
                break
            read += len(data)
            offset = 0
            while offset + _EVENT.size <= len(data):
                wd, mask, _cookie, size = _EVENT.unpack_from(data, offset)
                raw = data[offset + _EVENT.size : offset + _EVENT.size + size].split(b"\0", 1)[0]
                offset += _EVENT.size + size
                if mask & _IN_Q_OVERFLOW:
                    return [], []  # some deletion was not seen: say none rather than some
                if mask & (_IN_DELETE_SELF | _IN_MOVE_SELF | _IN_IGNORED):
                    moved.add(wd)
                elif mask & _IN_DELETE and not mask & _IN_ISDIR and raw and wd in found.dirs:
                    deleted[found.dirs[wd].rstrip("/") + "/" + os.fsdecode(raw)] = wd
        else:
            return [], []  # more than can be read: as lost
    except OSError:
        return [], []
    finally:
        found.close()
    said: list[str] = []
    relinked: list[tuple[str, str]] = []
    for path, wd in deleted.items():
        if wd in moved:
            continue
        if len(said) + len(relinked) >= _SAID_MAX:
            break
        with contextlib.suppress(OSError, ValueError):
            st = lstat_from(view, os.fsencode(path))
            if path in linked:
                relinked.append((path, linked[path]))
            elif stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
                said.append(path)
    return said, relinked
