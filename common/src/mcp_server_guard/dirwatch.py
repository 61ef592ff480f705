"""inotify watches on the entries a lookup consulted (the hidden list's, ``protected``): whether any of them changed
since, so that a lookup is redone only then."""

from __future__ import annotations

import contextlib
import errno
import os
import struct

from mcp_server_guard import linux

__all__ = ["Consulted", "DirWatch"]

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
