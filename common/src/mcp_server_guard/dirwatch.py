"""The entries a lookup consulted (the hidden list's, ``protected``): recorded while a path is resolved
(:func:`resolve`), compared (:func:`covers`), and watched with inotify (:class:`DirWatch`): whether any of them
changed since, so that a lookup is redone only then."""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import stat
import struct

from mcp_server_guard import linux

__all__ = ["Consulted", "DirWatch", "covers", "mtime_ns", "resolve"]

Consulted = dict[str, set[str] | None]  # directory -> the names in it a lookup consulted (None: all of them)


class DirWatch:
    """inotify watches on the entries a lookup consulted: has any of them been created, removed, renamed or had
    its attributes changed since they were armed (or a watched directory itself moved or gone, or events lost)?
    Events about other entries of those directories are read and let go. Without inotify, every question
    answers "changed"."""

    _MASK = 0x4 | 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800 | 0x1000000  # ATTRIB MOVED_* CREATE DELETE* ONLYDIR
    _EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (the name follows, NUL-padded)

    def __init__(self) -> None:
        self._fd = -1
        self._names: dict[int, set[str] | None] = {}  # watch descriptor -> the names that matter (None: all)

    def arm(self, consulted: Consulted) -> bool:
        """Watch exactly the entries ``consulted`` names from now on (directories that do not exist are skipped:
        their parent is watched). False when inotify cannot watch them all."""
        self.close()
        try:
            fd = linux.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, AttributeError):
            return False
        for directory, names in consulted.items():
            try:
                wd = linux.inotify_add_watch(fd, directory, self._MASK)
            except OSError as exc:
                if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
                    os.close(fd)
                    return False
                continue
            # One directory under two paths (a bind mount) is one watch: what matters is what matters under either.
            if wd in self._names:
                kept = self._names[wd]
                self._names[wd] = None if kept is None or names is None else kept | names
            else:
                self._names[wd] = None if names is None else set(names)
        self._fd = fd
        return True

    def unchanged(self) -> bool:
        if self._fd < 0:
            return False
        while True:
            try:
                data = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                return True  # nothing that matters happened
            except OSError:
                break
            if not data or self._matters(data):
                break
        self.close()
        return False

    def _matters(self, data: bytes) -> bool:
        offset = 0
        while offset + self._EVENT.size <= len(data):
            wd, mask, _cookie, size = self._EVENT.unpack_from(data, offset)
            raw = data[offset + self._EVENT.size : offset + self._EVENT.size + size]
            offset += self._EVENT.size + size
            if mask & 0xC000 or wd not in self._names:  # IN_Q_OVERFLOW, IN_IGNORED (a watched directory gone)
                return True
            names = self._names[wd]
            if names is None or not raw:  # every entry matters, or the directory itself changed
                return True
            if os.fsdecode(raw.split(b"\0", 1)[0]).casefold() in names:
                return True
        return False

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self._names = {}

    def __del__(self) -> None:
        # A watch let go (a server built and dropped in one process: the tests' in-memory tier) gives its inotify
        # instance back at once: a user has few (128 by default), and every running server holds some.
        with contextlib.suppress(OSError):
            self.close()


def mtime_ns(path: str) -> int:
    try:
        return os.lstat(path).st_mtime_ns
    except OSError:
        return -2  # gone: changed


# The entries a lookup consulted: directory -> the names looked up in it (None: every entry, a glob listed it).


def covers(consulted: Consulted, again: Consulted) -> bool:
    """Whether every entry in ``again`` is among those ``consulted`` (and so watched)."""
    for directory, names in again.items():
        if directory not in consulted:
            return False
        watched = consulted[directory]
        if watched is not None and (names is None or not names <= watched):
            return False
    return True


def resolve(path: str, consulted: Consulted) -> tuple[str, bool]:
    """``os.path.realpath(path)``, and whether ``path`` itself exists (``os.path.lexists``: a dangling symlink
    does); every entry looked up on the way is added to ``consulted`` (its directory and its name)."""
    pending = [part for part in path.split("/") if part]
    own_left = len(pending)  # the path's own components are the tail of ``pending`` (link targets go first)
    resolved, links, exists, missing, is_dir = "/", 0, False, False, True
    while pending:
        own = len(pending) == own_left
        name = pending.pop(0)
        own_left -= own
        if name in (".", ".."):
            missing = missing or not is_dir  # ENOTDIR: "file/.." names nothing
            resolved = posixpath.dirname(resolved) if name == ".." else resolved
            continue
        names = consulted.setdefault(resolved, set())
        if names is not None:
            names.add(name.casefold())  # compared case-blind: on a case-insensitive directory ".SSH" is ".ssh"
        candidate = posixpath.join(resolved, name)
        try:
            mode = os.lstat(candidate).st_mode
        except OSError:  # the rest is taken as spelled, as realpath does
            resolved, missing, is_dir = candidate, True, True
            continue
        exists = exists or (own and own_left == 0 and not missing)  # its last component is there (a link?)
        if stat.S_ISLNK(mode):
            links += 1
            if links > 40:  # ELOOP, as the kernel would say
                return posixpath.join(candidate, *pending), exists
            target = os.readlink(candidate)
            resolved = "/" if target.startswith("/") else resolved
            pending[:0] = [part for part in target.split("/") if part]
        else:
            resolved, is_dir = candidate, stat.S_ISDIR(mode)
    return resolved, exists or not missing
