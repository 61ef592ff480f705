"""What a command changed: its overlay's upper layer, read beside the real tree.

The upper directory holds every file the command created or changed (copied up whole: ``metacopy`` is off in
a user namespace), a *whiteout* (a character device 0:0) for every name it deleted, and an *opaque* directory
(``user.overlay.opaque = y``) where it replaced a directory wholesale (``rm -r d; mkdir d``). Read after every
process of the call has ended (or, for a running job, live), it becomes a :class:`ChangeSet`: one
:class:`Change` per path, with what it was in the real tree.

Threat: the upper tree is shaped by the command. The reader never follows a link (each name is opened on its
own, ``O_NOFOLLOW``, from its directory's fd; the same walk in the real tree), never opens anything but a
directory or a regular file, and opens files ``O_NONBLOCK``: a FIFO, socket or device is a change to report,
never something to open. A tree too large to list is reported as such (``ChangeSet.incomplete``), never
silently cut.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal, cast

from mcp_server_guard.files.history import file_kind
from mcp_server_guard.files.trees import open_own_dir

__all__ = ["MAX_DEPTH", "MAX_ENTRIES", "Change", "ChangeSet", "TooDeep", "read_upper", "walk_real"]

Action = Literal["create", "modify", "delete", "meta"]
Kind = Literal["file", "dir", "symlink", "fifo", "socket", "device"]

MAX_ENTRIES = 200_000  # paths one change set lists at most (created and deleted trees included)
MAX_DEPTH = 128  # levels below a root a changed path may have
_OPAQUE = ("user.overlay.opaque", "trusted.overlay.opaque")
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Change:
    """One path the command changed, relative to its root."""

    path: str
    action: Action
    kind: Kind
    size: int = 0  # bytes of the new file (create, modify); of the old one (delete)
    old_size: int = 0  # modify: the size before
    mode: int = 0  # permission bits now (for a delete: before)
    old_mode: int = 0  # modify, meta: before
    top: str = ""  # inside a directory created or deleted as a whole: that directory ("" for the top itself)
    opaque: bool = False  # it replaces the real file or directory of that name wholesale
    origin: bool = False  # copied up from the real tree (it was there when the command first changed it)
    mtime_ns: int = 0  # meta: the modification time the command set

    @property
    def executable(self) -> bool:
        return self.kind == "file" and bool(self.mode & 0o111)


@dataclass
class ChangeSet:
    """Everything one command changed under one root."""

    root: str  # the real root
    upper: str  # its upper directory
    changes: list[Change] = field(default_factory=list)
    incomplete: bool = False  # more than MAX_ENTRIES paths: the list is cut, the judgement must not trust it

    def __bool__(self) -> bool:
        return bool(self.changes)


def _kind(mode: int) -> Kind:
    return cast(Kind, file_kind(mode))


def _whiteout(st: os.stat_result) -> bool:
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


def _origin(dirfd: int, name: str) -> bool:
    """Whether overlayfs copied this entry up from the real tree (it marks every copy-up)."""
    try:
        os.getxattr(f"/proc/self/fd/{dirfd}/{name}", "user.overlay.origin", follow_symlinks=False)
    except OSError:
        return False
    return True


def _opaque(fd: int) -> bool:
    for name in _OPAQUE:
        with contextlib.suppress(OSError):
            if os.getxattr(fd, name) == b"y":
                return True
    return False


def _lstat(name: str, dirfd: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _open_dir(name: str, dirfd: int, *, ours: bool = False) -> int | None:
    """A directory below ``dirfd`` (no link followed); None when it is gone or not a directory. ``ours``: the
    upper layer, whose directories are this user's (one with no permission is let in: ``open_own_dir``)."""
    try:
        return open_own_dir(name, dirfd) if ours else os.open(name, _DIR, dir_fd=dirfd)
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
            raise
        return None


class TooDeep(ValueError):
    """A change set with paths more than MAX_DEPTH levels deep: not read, not applied."""


def _depth(path: str) -> int:
    depth = path.count("/") + 1
    if depth > MAX_DEPTH:
        # Threat: a tree thousands of levels deep (mkdir -p d/d/d/…) exhausting the reader's stack or descriptors,
        # or the applier's; no project needs one this deep.
        raise TooDeep(f"a path more than {MAX_DEPTH} levels deep: {path[:80]}…")
    return depth


def _names(fd: int) -> list[str]:
    with os.scandir(fd) as entries:
        return sorted(entry.name for entry in entries)


def _same_content(upper_dir: int, real_dir: int, name: str, size: int) -> bool:
    """Whether two regular files hold the same bytes (opened without following or blocking)."""
    try:
        a = os.open(name, _FILE, dir_fd=upper_dir)
    except OSError:
        return False
    try:
        try:
            b = os.open(name, _FILE, dir_fd=real_dir)
        except OSError:
            return False
        try:
            if not (stat.S_ISREG(os.fstat(a).st_mode) and stat.S_ISREG(os.fstat(b).st_mode)):
                return False
            offset = 0
            while offset < size:
                left, right = os.pread(a, _CHUNK, offset), os.pread(b, _CHUNK, offset)
                if left != right:
                    return False
                if not left:
                    break
                offset += len(left)
            return os.pread(a, 1, size) == os.pread(b, 1, size)
        finally:
            os.close(b)
    finally:
        os.close(a)


def walk_real(
    dirfd: int, prefix: str, budget: list[int], *, ours: bool = False
) -> Iterator[tuple[str, os.stat_result]]:
    """Every path below an open directory (not following links), ``prefix``-relative, depth first; stops when
    ``budget[0]`` runs out. ``ours``: the tree is an upper layer (see _open_dir)."""
    stack: list[tuple[int, str]] = [(os.dup(dirfd), prefix)]
    try:
        while stack:
            fd, rel = stack.pop()
            try:
                for name in _names(fd):
                    st = _lstat(name, fd)
                    if st is None:
                        continue
                    budget[0] -= 1
                    if budget[0] < 0:
                        return
                    path = f"{rel}/{name}"
                    _depth(path)
                    yield path, st
                    if stat.S_ISDIR(st.st_mode):
                        child = _open_dir(name, fd, ours=ours)
                        if child is not None:
                            stack.append((child, path))
            finally:
                os.close(fd)
    finally:
        for fd, _ in stack:
            os.close(fd)


class _Reader:
    def __init__(self, real_root: int, upper_root: int, skip: frozenset[str]) -> None:
        self.real_root, self.upper_root = real_root, upper_root
        self.skip = skip  # paths of the real tree that are not the command's (our own area in a root)
        self.out: list[Change] = []
        self.budget = [MAX_ENTRIES]

    def add(self, change: Change) -> None:
        self.budget[0] -= 1
        if self.budget[0] >= 0:
            self.out.append(change)

    def deleted_tree(self, real_dir: int, name: str, path: str) -> None:
        """A real directory the command removed (or replaced): every path in it, as deleted."""
        fd = _open_dir(name, real_dir)
        if fd is None:
            return
        try:
            for rel, st in walk_real(fd, path, self.budget):
                kind = _kind(st.st_mode)
                size = st.st_size if kind == "file" else 0
                self.out.append(Change(rel, "delete", kind, size=size, mode=stat.S_IMODE(st.st_mode), top=path))
        finally:
            os.close(fd)

    def created_tree(self, upper_dir: int, name: str, path: str) -> None:
        """A directory that is the command's alone (new, or replacing the real one): every path in it."""
        fd = _open_dir(name, upper_dir, ours=True)
        if fd is None:
            return
        try:
            for rel, st in walk_real(fd, path, self.budget, ours=True):
                if _whiteout(st):
                    continue  # hides nothing here: the directory has no real counterpart
                kind = _kind(st.st_mode)
                size = st.st_size if kind == "file" else 0
                self.add(Change(rel, "create", kind, size=size, mode=stat.S_IMODE(st.st_mode), top=path))
        finally:
            os.close(fd)

    def deleted(self, real_dir: int | None, name: str, path: str, top: str = "") -> None:
        real = _lstat(name, real_dir) if real_dir is not None else None
        if real is None:
            return  # gone from the real tree already: nothing to delete
        kind = _kind(real.st_mode)
        size = real.st_size if kind == "file" else 0
        self.add(Change(path, "delete", kind, size=size, mode=stat.S_IMODE(real.st_mode), top=top))
        if kind == "dir" and real_dir is not None:
            self.deleted_tree(real_dir, name, path)

    def merged(self, upper_dir: int, real_dir: int | None, rel: str) -> None:
        """A directory that exists in both (or, as far as we know, whose real counterpart we may look into)."""
        for name in _names(upper_dir):
            if self.budget[0] < 0:
                return
            path = f"{rel}/{name}" if rel else name
            if path in self.skip:
                continue
            _depth(path)
            st = _lstat(name, upper_dir)
            if st is None:
                continue
            real = _lstat(name, real_dir) if real_dir is not None else None
            if _whiteout(st):
                self.deleted(real_dir, name, path)
                continue
            kind = _kind(st.st_mode)
            mode = stat.S_IMODE(st.st_mode)
            if kind == "dir":
                child = _open_dir(name, upper_dir, ours=True)
                if child is None:
                    continue
                try:
                    opaque = _opaque(child)
                    if real is not None and stat.S_ISDIR(real.st_mode) and not opaque:
                        if stat.S_IMODE(real.st_mode) != mode:
                            self.add(Change(path, "meta", "dir", mode=mode, old_mode=stat.S_IMODE(real.st_mode)))
                        real_child = _open_dir(name, real_dir) if real_dir is not None else None
                        try:
                            self.merged(child, real_child, path)
                        finally:
                            if real_child is not None:
                                os.close(real_child)
                        continue
                finally:
                    os.close(child)
                if real is not None:  # replaced: the real file or directory goes, the command's tree comes
                    self.deleted(real_dir, name, path, top=path)
                origin = not opaque and _origin(upper_dir, name)
                self.add(Change(path, "create", "dir", mode=mode, opaque=real is not None, origin=origin))
                self.created_tree(upper_dir, name, path)
                continue
            size = st.st_size if kind == "file" else 0
            if real is None:
                self.add(Change(path, "create", kind, size=size, mode=mode, origin=_origin(upper_dir, name)))
                continue
            real_kind = _kind(real.st_mode)
            if real_kind == "dir":
                self.deleted(real_dir, name, path, top=path)
                self.add(Change(path, "create", kind, size=size, mode=mode, opaque=True))
                continue
            old_mode = stat.S_IMODE(real.st_mode)
            if kind == real_kind == "file":
                assert real_dir is not None
                if st.st_size == real.st_size and _same_content(upper_dir, real_dir, name, st.st_size):
                    if mode != old_mode or st.st_mtime_ns != real.st_mtime_ns:
                        self.add(Change(path, "meta", kind, size=size, old_size=real.st_size, mode=mode,
                                        old_mode=old_mode, mtime_ns=st.st_mtime_ns))  # fmt: skip
                    continue  # copied up and left as it was
            elif kind == real_kind == "symlink":
                assert real_dir is not None
                if os.readlink(name, dir_fd=upper_dir) == os.readlink(name, dir_fd=real_dir):
                    continue
            self.add(Change(path, "modify", kind, size=size, old_size=real.st_size if real_kind == "file" else 0,
                            mode=mode, old_mode=old_mode))  # fmt: skip


def read_upper(upper: str, real_root: int, root: str, skip: frozenset[str] = frozenset()) -> ChangeSet:
    """The change set of one root: ``upper`` is the overlay's upper directory, ``real_root`` an open fd of the
    real root (both read without following a link). ``skip``: root-relative paths that are not the command's."""
    changes = ChangeSet(root=root, upper=upper)
    upper_fd = os.open(upper, _DIR)
    try:
        reader = _Reader(real_root, upper_fd, skip)
        reader.merged(upper_fd, real_root, "")
        changes.changes = reader.out
        changes.incomplete = reader.budget[0] < 0
    finally:
        os.close(upper_fd)
    return changes
