"""What the names of files with several names hold at a call's end: watched on the copy by the call's init (inotify),
said at the call's end (``remade``).

A real file with several names (``h1``, ``h2``, ``d/h3`` one inode) shows on the copy as that one file until the
command changes it; once written, overlayfs copies it up as a file of its own and marks nothing (it marks no origin
for a file with several names). A name of it removed and made again, not by a rename (``rm h1 && cp -p backup h1``,
``tar x``, ``git checkout`` rewriting files), or the file's copy brought back to another of its names (``echo z >>
h2 && rm h1 && mv h2 h1``, ``ln -f h2 h1``) leaves nothing the server can tell apart from the file rewritten in
place, which natively reaches every other name (red team 17 F1). So the init follows each name: before the command
starts, an inotify watch on each directory of the copy that the server found to hold such a file
(``wire.CallRequest.linked``), for deletions, creations and renames; each event, in the order the kernel queued it,
moves what the name holds — the project's file that was at some name when the call began, a file the call made,
or "cannot say". A name made by a link takes what its source held then: the box's rename helper makes every link
that touches a watched directory itself (``renames``) and tells this module (``linking``) first, so that the link's
own creation is told from any other (``echo > x``); its renames of such files and its swaps go through ``moving``.
While the helper acts, anything else that happens to the names involved (another process of the call removing or
making one) makes them files of the call's: what the helper looked at is then not what moved (red team 52). At the
call's end each name the call removed, renamed or replaced is said with what it holds: a file the call made
(``remade``: the server lands it as a file of its own), or some name's file (``relinked``, with that name, its own
included: the server takes it for the real file where that name was one of it). A lost event (the queue
overflowed), a directory moved or removed meanwhile (its names, its events), a file moved to a directory not
watched and back: nothing is said of those names, and the server judges them by their bytes, as before.

The watches are made by the init before the command starts (no capability needed: reading the directories) and
read by it (and by the rename helper's thread, under one lock) while the call runs and after every process of it
is gone; the command never holds the descriptor (close-on-exec, and the init is not dumpable). A path said is
checked on the copy one name at a time, no link followed.

Standard library only (the in-box supervisor imports this).
"""

from __future__ import annotations

import _thread
import contextlib
import os
import stat
import struct
from collections.abc import Callable

from mcp_server_guard import linux
from mcp_server_guard.shell.sandbox.tree_moves import lstat_from

__all__ = ["Watch", "Where", "holds", "linking", "moving", "remade", "unsaid", "watch", "watching", "where"]

WATCHED_MAX = 4096  # directories watched at most in one call
_SAID_MAX = 10_000  # names said at most
_READ_MAX = 8 << 20  # bytes of events read at most
_NAMES_MAX = 100_000  # names followed at most (past that: as lost)
_IN_MOVED_FROM = 0x40
_IN_MOVED_TO = 0x80
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_DELETE_SELF = 0x400
_IN_MOVE_SELF = 0x800
_IN_IGNORED = 0x8000
_IN_ONLYDIR = 0x01000000
_IN_DONT_FOLLOW = 0x02000000
_IN_ISDIR = 0x40000000
_IN_Q_OVERFLOW = 0x4000
_MASK = _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE | _IN_DELETE_SELF | _IN_MOVE_SELF
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (the name follows, NUL-padded)

# What a name holds: the project's file that was at (wd, name) when the call began, or one of these.
_Key = tuple[int, bytes]  # (watch, last name)
Where = tuple[tuple[int, int], bytes]  # a name as the rename helper says it: its directory's (device, inode), its name
_GONE: _Key = (-1, b"")  # nothing
_NEW: _Key = (-2, b"")  # a file the call made
_UNKNOWN: _Key = (-3, b"")  # cannot be said

_calls: list[Watch] = []  # the call's watch, for the rename helper's thread (one call at a time per init)


class Watch:
    """One call's watches: an inotify descriptor, the directory each watch is on, and what each name followed holds."""

    def __init__(self, fd: int, dirs: dict[int, str], inodes: dict[tuple[int, int], int]) -> None:
        self.fd = fd
        self.dirs = dirs
        self.inodes = inodes  # each watched directory's (device, inode) on the copy -> its watch
        self.names: dict[_Key, _Key] = {}  # a name whose file changed -> what it holds now
        self.cookies: dict[int, _Key] = {}  # a rename's first half seen, its second not yet: what it moved
        self.moved: set[int] = set()  # watched directories moved or removed: their path names another one now
        self.pending: dict[_Key, _Key] = {}  # the rename helper's link about to be made -> what it will hold
        self.began: set[_Key] = set()  # names followed that were (or may have been) there when the call began
        self.window: dict[_Key, list[int]] = {}  # while the helper links or swaps: each of its names' events
        self.out = False  # a file of the project was linked to a name not watched
        self.away = 0  # renames seen half whose file was (or may have been) the project's
        self.lost = False
        self.read = 0
        self.lock = _thread.allocate_lock()

    def close(self) -> None:
        """Closed: no longer the call's (a closed watch says nothing)."""
        if self in _calls:
            _calls.clear()
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1

    def holds(self, key: _Key) -> _Key:
        """What a name of a watched directory holds now (the lock held, the events read)."""
        if key[0] in self.moved:
            return _UNKNOWN
        return self.names.get(key, key)

    def escaped(self) -> bool:
        """Whether a file of the project went out of sight (renamed to, or linked in, a directory not watched): a
        file that comes from there may be it."""
        return self.out or self.away > 0

    def drain(self) -> None:
        """Read every event queued so far and follow it (the lock held)."""
        while not self.lost and self.fd >= 0:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                self.lost = True
                return
            if not data:
                return
            self.read += len(data)
            if self.read > _READ_MAX or len(self.names) + len(self.pending) > _NAMES_MAX:
                self.lost = True  # more than may be read: as lost
                return
            self._follow(data)

    def _follow(self, data: bytes) -> None:
        offset = 0
        while offset + _EVENT.size <= len(data):
            wd, mask, cookie, size = _EVENT.unpack_from(data, offset)
            raw = data[offset + _EVENT.size : offset + _EVENT.size + size].split(b"\0", 1)[0]
            offset += _EVENT.size + size
            if mask & _IN_Q_OVERFLOW:
                self.lost = True  # some event was not seen: say none rather than some
                return
            if mask & (_IN_DELETE_SELF | _IN_MOVE_SELF | _IN_IGNORED):
                self.moved.add(wd)
                continue
            if mask & _IN_ISDIR or not raw or wd not in self.dirs:
                continue  # (a directory's own names are not followed: a watched one says it moved itself)
            key = (wd, raw)
            if key in self.window:
                self.window[key].append(mask & _MASK)
            if key not in self.names and not mask & _IN_CREATE:
                self.began.add(key)  # (a creation's name had none; a rename's target may have had one)
            if mask & _IN_DELETE:
                self.names[key] = _GONE
            elif mask & _IN_CREATE:
                self.names[key] = self.pending.pop(key, _NEW)
            elif mask & _IN_MOVED_FROM:
                self.cookies[cookie] = held = self.holds(key)
                self.away += held[0] >= 0 or held == _UNKNOWN
                self.names[key] = _GONE
            elif mask & _IN_MOVED_TO:
                came = self.cookies.pop(cookie, None)
                if came is not None:
                    self.away -= came[0] >= 0 or came == _UNKNOWN
                self.names[key] = came if came is not None else _UNKNOWN if self.escaped() else _NEW

    def key(self, where: Where | None) -> _Key | None:
        """A name (its directory's device and inode, its last name) as followed here; None where not watched."""
        if where is None or (wd := self.inodes.get(where[0])) is None:
            return None
        return (wd, where[1])


def watch(directories: list[str]) -> Watch | None:
    """Watch ``directories`` (absolute paths on the call's view); None when inotify is not there or none can be
    watched. A directory that is gone, or not one, is skipped; past ``WATCHED_MAX`` the rest too. The watch is the
    call's (``linking``) until ``remade`` reads it."""
    _calls.clear()
    if not directories:
        return None
    try:
        fd = linux.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, AttributeError):
        return None
    dirs: dict[int, str] = {}
    inodes: dict[tuple[int, int], int] = {}
    for directory in directories[:WATCHED_MAX]:
        try:
            wd = linux.inotify_add_watch(fd, directory, _MASK | _IN_ONLYDIR | _IN_DONT_FOLLOW)
            st = os.stat(directory, follow_symlinks=False)
        except OSError:
            continue
        dirs[wd] = directory.rstrip("/") or "/"
        inodes[(st.st_dev, st.st_ino)] = wd
    if not dirs:
        os.close(fd)
        return None
    _calls.append(Watch(fd, dirs, inodes))
    return _calls[0]


def watching() -> bool:
    """Whether the call's init watches directories (the rename helper then says its links and exchanges)."""
    return bool(_calls)


def unsaid(target: Where | None) -> None:
    """The kernel is about to make ``target`` (a link the rename helper does not make, from a descriptor): it is
    taken for a file of the call's (and so is, should the link fail, what the name's next creation holds)."""
    found = _calls[0] if _calls else None
    if found is None:
        return
    with found.lock:
        to = found.key(target)
        if to is not None and not found.lost:
            found.drain()
            found.pending[to] = _NEW  # (a file of its own: it then reaches no other name of a project file)
            if len(found.pending) > _NAMES_MAX:  # (a link that fails leaves one: bounded, then as lost)
                found.lost, found.pending = True, {}


def linking(target: Where | None, source: Where | None, make: Callable[[], int], *, known: bool = True) -> int | None:
    """The rename helper is about to link ``source`` (a regular file) to ``target``: where either is in a watched
    directory, make it with ``make`` (0 or an errno) and follow what the new name holds — what the source held then
    (every event up to now read first, so that the link's own creation is the next of that name). A source out of
    sight (``None``) holds a file of the call's, unless a file of the project went out of sight (then: cannot say);
    not ``known`` (another process changed the source meanwhile), it is taken for a file of the call's (it then
    reaches no other name of a project file). None: neither end is watched (the caller decides)."""
    found = _calls[0] if _calls else None
    if found is None:
        return None
    with found.lock:
        to, came = found.key(target), found.key(source)
        if to is None and came is None:
            return None
        found.drain()
        held = found.holds(came) if came is not None else _NEW if not known or not found.escaped() else _UNKNOWN
        if to is None:
            found.out = found.out or held != _NEW  # out of sight: a file that comes from there may be it
            return make()
        found.pending[to] = held
        found.window = {k: [] for k in (to, came) if k is not None}
        error = make()
        found.drain()
        found.pending.pop(to, None)
        # Exactly the link's own creation, and nothing else of either name, meanwhile: else another process of the
        # call changed one of them (red team 52 F1), and the name is taken for a file of its own (it then reaches no
        # other name of a project file).
        if found.window != {k: [_IN_CREATE] if k == to and not error else [] for k in found.window}:
            found.names[to] = _NEW
        found.window = {}
        return error


def moving(ends: tuple[Where | None, Where | None], make: Callable[[], int], *, swap: bool = False) -> tuple[int, bool]:
    """A rename of ``ends[0]`` to ``ends[1]`` made by the rename helper with ``make`` (0 or an errno); ``swap``:
    ``RENAME_EXCHANGE``, after which each name holds what the other held (the kernel says it as two renames, which
    read in turn would move one file twice). Returns the errno and whether nothing but the rename's own events
    touched either name meanwhile: where another process of the call removed or made one (red team 52 F1), what
    the helper looked at before is not what moved — a swapped name is then taken for a file of the call's (it
    reaches no other name of a project file), and the helper notes no origin. A file of the project swapped to a
    name not watched went out of sight."""
    found = _calls[0] if _calls else None
    if found is None:
        return make(), True
    with found.lock:
        found.drain()
        keys = [found.key(end) for end in ends]
        held = [found.holds(k) if k is not None else _UNKNOWN for k in keys]
        found.window = {k: [] for k in keys if k is not None}
        error = make()
        found.drain()
        window, found.window = found.window, {}
        if error:
            return error, True
        own = [[_IN_MOVED_FROM, _IN_MOVED_TO]] * 2 if swap else [[_IN_MOVED_FROM], [_IN_MOVED_TO]]
        clean = all(sorted(window[k]) == want for k, want in zip(keys, own, strict=True) if k is not None)
        if swap:
            if None in keys and any(h not in (_NEW, _GONE) for k, h in zip(keys, held, strict=True) if k is not None):
                found.out = True  # out of sight: a file that comes from there may be it
            for key, other in ((keys[0], held[1]), (keys[1], held[0])):
                if key is not None:
                    if key not in found.names:
                        found.began.add(key)
                    found.names[key] = other if clean else _NEW
        elif not clean and keys[1] is not None:
            found.names[keys[1]] = _NEW
        return error, clean


def where(dirfd: int, name: bytes) -> Where | None:
    """A name in a directory the rename helper holds open (``tree_moves.open_parent``) as names are followed here:
    the directory's device and inode, and the name; None when that cannot be said."""
    try:
        st = os.fstat(dirfd)
    except OSError:
        return None
    return ((st.st_dev, st.st_ino), name)


def holds(dirfd: int, name: bytes, st: os.stat_result) -> bool:
    """Whether ``name`` holds the file ``st`` is of (looked at without following a link)."""
    try:
        now = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino)


def remade(found: Watch | None, view: int) -> tuple[list[str], list[tuple[str, str]]]:
    """Once every process of the call is gone: each name followed (one the call removed, renamed or replaced) that
    holds a regular file — made by the call (the first list), or the file some name had when the call began (the
    second, with that name: its own too) — looked at from ``view`` (the root of the call's mount namespace) without
    following a link. Nothing when an event was lost or there is more to say than ``_SAID_MAX`` (``found.lost``
    then). The watch is closed."""
    if found is None:
        return [], []
    try:
        with found.lock:
            found.drain()
            if found.lost:
                return [], []
            # (A name the call made had no file there to begin with: nothing to say of it.)
            held = {key: now for key, now in found.names.items() if key in found.began}
    finally:
        found.close()
    stays: dict[int, bool] = {}
    said: list[str] = []
    relinked: list[tuple[str, str]] = []
    for (wd, name), now in held.items():
        if now in (_GONE, _UNKNOWN) or wd in found.moved or now[0] in found.moved:
            continue  # (a name back to the very file it began with is said too: renamed away and back, its rename
            # helper's note would otherwise make it a file of its own — red team 53 F1)
        if len(said) + len(relinked) >= _SAID_MAX:
            # Threat: the names past the bound judged by their bytes (a name made again landing under the file's
            # untouched names: red team 55 F1, 10,000 files moved in first): said as lost, every name one of its own.
            found.lost = True
            return [], []
        if wd not in stays:
            stays[wd] = _stays(found, wd, view)
        if not stays[wd] or (now[0] >= 0 and not stays.setdefault(now[0], _stays(found, now[0], view))):
            continue
        path = found.dirs[wd].rstrip("/") + "/" + os.fsdecode(name)
        with contextlib.suppress(OSError, ValueError):
            if not stat.S_ISREG(lstat_from(view, os.fsencode(path)).st_mode):
                continue
            if now == _NEW:
                said.append(path)
            else:
                relinked.append((path, found.dirs[now[0]].rstrip("/") + "/" + os.fsdecode(now[1])))
    return said, relinked


def _stays(found: Watch, wd: int, view: int) -> bool:
    """Whether the watched directory is at its path still (no directory above it was moved meanwhile)."""
    try:
        st = lstat_from(view, os.fsencode(found.dirs[wd]))
    except (OSError, ValueError):
        return False
    return found.inodes.get((st.st_dev, st.st_ino)) == wd
