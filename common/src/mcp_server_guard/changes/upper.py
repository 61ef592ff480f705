"""What a command changed: its overlay's upper layer, read beside the real tree.

The upper directory holds every file the command created or changed (copied up whole: ``metacopy`` is off in
a user namespace), a *whiteout* (a character device 0:0) for every name it deleted, and an *opaque* directory
(``user.overlay.opaque = y``) where it replaced a directory wholesale (``rm -r d; mkdir d``). Read after every
process of the call has ended (or, for a running job, live), it becomes a :class:`ChangeSet`: one
:class:`Change` per path, with what it was in the real tree, and the modification time the command left on each
directory it touched (:class:`DirTime`: applying entries changes a directory's time; the command's is put back).

What the copy cannot say by itself is read from both trees:

* **metadata**: a file copied up and left with the same bytes is no change unless its mode, modification time or
  ``user.*`` attributes differ (compared by the names the command saw: ``changes.xattrs``); a directory's mode and
  attributes likewise;
* **hard links**: names of one upper inode land as one inode. Where one of them is a real file the command left
  as it was (``ln a b``), the others become new names of that real file (``link``: its other real names stay
  with it). Where the command rewrote one name of a real file that has other names in the root (``echo >> h1``
  with ``h2`` a hard link of it), those names get the new file too, as they would natively — unless one of them
  lies outside the root (then only this name changes: nothing outside is written through a link);
* **moves** of a file with other names (``mv h1 n`` while ``h2`` stays): the real file is renamed, so its names
  stay one inode (``moved_from``).

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
from dataclasses import dataclass, field, replace
from typing import Literal, cast

from mcp_server_guard.changes.xattrs import Xattrs, at, seen
from mcp_server_guard.files.history import file_kind
from mcp_server_guard.files.trees import open_own_dir

__all__ = ["MAX_DEPTH", "MAX_ENTRIES", "Change", "ChangeSet", "DirTime", "TooDeep", "read_upper", "walk_real"]

Action = Literal["create", "modify", "delete", "meta"]
Kind = Literal["file", "dir", "symlink", "fifo", "socket", "device"]

MAX_ENTRIES = 200_000  # paths one change set lists at most (created and deleted trees included)
MAX_DEPTH = 128  # levels below a root a changed path may have
WALK_ENTRIES = 50_000  # paths of a root walked at most to find the other names of a file with several
ROOT = "."  # the root itself, as a change's path (its mode and attributes; its modification time)
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
    origin: bool = False  # copied up from the real tree (overlayfs marks a copy-up; it does not say from where)
    mtime_ns: int = 0  # meta: the modification time the command left (a directory's is a DirTime)
    old_mtime_ns: int = 0  # meta: before
    xattrs: Xattrs = ()  # meta: the user.* attributes the command left, by the names it saw
    old_xattrs: Xattrs = ()  # meta: before
    link: str = ""  # create, modify: this path becomes another name of the file at ``link`` (root-relative)
    link_old: bool = False  # link: of the real file there before anything is applied (else: what the command left)
    stays: str = ""  # modify, delete of a file with other names: one of them that stays (an undo relinks to it)
    moved_from: str = ""  # create: the real file at ``moved_from`` is renamed here, as it was
    gone: bool = False  # create: a real file the command changed here was deleted by someone else meanwhile
    escaped: bool = False  # the real entry here was shown through the escape layer (``changes.escapes``)

    @property
    def executable(self) -> bool:
        return self.kind == "file" and bool(self.mode & 0o111)


@dataclass(frozen=True)
class DirTime:
    """A directory the command touched: the modification time it left (put back once its entries are applied)."""

    path: str  # root-relative; ROOT for the root
    mtime_ns: int
    ctime_ns: int  # the real directory's change time when read (-1: a directory the command made)
    old_mtime_ns: int = 0  # the real directory's modification time when read


@dataclass(frozen=True)
class ChangeSet:
    """Everything one command changed under one root."""

    root: str  # the real root
    upper: str  # its upper directory
    changes: tuple[Change, ...] = ()
    incomplete: bool = False  # more than MAX_ENTRIES paths: the list is cut, the judgement must not trust it
    times: tuple[DirTime, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.changes)


def _kind(mode: int) -> Kind:
    return cast(Kind, file_kind(mode))


def _whiteout(st: os.stat_result) -> bool:
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


def _has(path: str, names: tuple[str, ...], value: bytes | None = None) -> bool:
    for name in names:
        with contextlib.suppress(OSError):
            found = os.getxattr(path, name, follow_symlinks=False)
            if value is None or found == value:
                return True
    return False


def _origin(dirfd: int, name: str) -> bool:
    """Whether overlayfs copied this entry up from the real tree (it marks every copy-up of a file with one name)."""
    return _has(at(dirfd, name), ("user.overlay.origin", "trusted.overlay.origin"))


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


def same_bytes(a_dir: int, a_name: str, b_dir: int, b_name: str, size: int) -> bool:
    """Whether two regular files hold the same bytes (opened without following or blocking)."""
    try:
        a = os.open(a_name, _FILE, dir_fd=a_dir)
    except OSError:
        return False
    try:
        try:
            b = os.open(b_name, _FILE, dir_fd=b_dir)
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
                    path = f"{rel}/{name}" if rel else name
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


@dataclass
class _Name:
    """One name of an upper file, with what the real tree has there."""

    path: str
    index: int  # its Change in the reader's list; -1: none (the same bytes and metadata as the real file)
    real: os.stat_result | None  # a regular file of the real tree at that path
    same: bool  # the upper file holds the real file's bytes
    origin: bool


@dataclass
class _Reader:
    real_root: int
    upper_root: int
    skip: frozenset[str]  # paths of the real tree that are not the command's (our own area in a root)
    started_ns: int = 0  # when the command started: a real directory changed later was changed by someone else
    escaped: frozenset[str] = frozenset()  # real entries shown through the escape layer
    out: list[Change] = field(default_factory=list)
    times: list[DirTime] = field(default_factory=list)
    budget: list[int] = field(default_factory=lambda: [MAX_ENTRIES])
    inodes: dict[int, list[_Name]] = field(default_factory=dict)  # upper regular files, by upper inode
    touched: set[str] = field(default_factory=set)  # every path the upper layer holds
    landed: dict[int, str] = field(default_factory=dict)  # real inodes the command renamed: the name they end at

    def add(self, change: Change) -> int:
        self.budget[0] -= 1
        if self.budget[0] >= 0:
            self.out.append(change)
        return len(self.out) - 1

    def note(self, path: str, st: os.stat_result, index: int, real: os.stat_result | None, same: bool,
             origin: bool) -> None:  # fmt: skip
        """An upper regular file: its names are matched up once the walk is over (hard links, moves)."""
        real_file = real if real is not None and stat.S_ISREG(real.st_mode) else None
        self.inodes.setdefault(st.st_ino, []).append(_Name(path, index, real_file, same, origin))

    def deleted_tree(self, real_dir: int, name: str, path: str) -> None:
        """A real directory the command removed (or replaced): every path in it, as deleted."""
        fd = _open_dir(name, real_dir)
        if fd is None:
            return
        try:
            for rel, st in walk_real(fd, path, [self.budget[0]]):
                kind = _kind(st.st_mode)
                size = st.st_size if kind == "file" else 0
                self.add(Change(rel, "delete", kind, size=size, mode=stat.S_IMODE(st.st_mode), top=path))
                if self.budget[0] < 0:
                    return
        finally:
            os.close(fd)

    def created_tree(self, upper_dir: int, name: str, path: str, st: os.stat_result) -> None:
        """A directory that is the command's alone (new, or replacing the real one): every path in it."""
        fd = _open_dir(name, upper_dir, ours=True)
        if fd is None:
            return
        try:
            self.times.append(DirTime(path, st.st_mtime_ns, -1))
            for rel, inner in walk_real(fd, path, [self.budget[0]], ours=True):
                if _whiteout(inner):
                    continue  # hides nothing here: the directory has no real counterpart
                kind = _kind(inner.st_mode)
                size = inner.st_size if kind == "file" else 0
                index = self.add(Change(rel, "create", kind, size=size, mode=stat.S_IMODE(inner.st_mode), top=path))
                self.touched.add(rel)
                if kind == "file":
                    self.note(rel, inner, index, None, False, False)
                elif kind == "dir":
                    self.times.append(DirTime(rel, inner.st_mtime_ns, -1))
                if self.budget[0] < 0:
                    return
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
            self.touched.add(path)
            real = _lstat(name, real_dir) if real_dir is not None else None
            if _whiteout(st):
                self.deleted(real_dir, name, path)
                continue
            if stat.S_ISDIR(st.st_mode):
                self.directory(upper_dir, real_dir, name, path, st, real)
            else:
                self.entry(upper_dir, real_dir, name, path, st, real)

    def directory(self, upper_dir: int, real_dir: int | None, name: str, path: str, st: os.stat_result,
                  real: os.stat_result | None) -> None:  # fmt: skip
        mode = stat.S_IMODE(st.st_mode)
        child = _open_dir(name, upper_dir, ours=True)
        if child is None:
            return
        try:
            opaque = _opaque(child)
            if real is not None and stat.S_ISDIR(real.st_mode) and not opaque:
                assert real_dir is not None
                self.metadata(upper_dir, real_dir, name, path, st, real, "dir")
                self.times.append(DirTime(path, st.st_mtime_ns, real.st_ctime_ns, real.st_mtime_ns))
                real_child = _open_dir(name, real_dir)
                try:
                    self.merged(child, real_child, path)
                finally:
                    if real_child is not None:
                        os.close(real_child)
                return
        finally:
            os.close(child)
        if real is not None:  # replaced: the real file or directory goes, the command's tree comes
            self.deleted(real_dir, name, path, top=path)
        origin = not opaque and _origin(upper_dir, name)
        self.add(Change(path, "create", "dir", mode=mode, opaque=real is not None, origin=origin))
        self.created_tree(upper_dir, name, path, st)

    def metadata(self, upper_dir: int, real_dir: int, name: str, path: str, st: os.stat_result,
                 real: os.stat_result, kind: Kind) -> int:  # fmt: skip
        """A meta change where the mode, the modification time (not a directory's: see DirTime) or the attributes
        differ; the index of the change added, -1 when none."""
        mode, old_mode = stat.S_IMODE(st.st_mode), stat.S_IMODE(real.st_mode)
        xattrs, old_xattrs = seen(at(upper_dir, name)), seen(at(real_dir, name), escaped=path in self.escaped)
        timed = kind != "dir" and st.st_mtime_ns != real.st_mtime_ns
        if mode == old_mode and xattrs == old_xattrs and not timed:
            return -1
        size = st.st_size if kind == "file" else 0
        return self.add(Change(path, "meta", kind, size=size, old_size=real.st_size if kind == "file" else 0,
                               mode=mode, old_mode=old_mode, mtime_ns=st.st_mtime_ns, old_mtime_ns=real.st_mtime_ns,
                               xattrs=xattrs, old_xattrs=old_xattrs))  # fmt: skip

    def entry(self, upper_dir: int, real_dir: int | None, name: str, path: str, st: os.stat_result,
              real: os.stat_result | None) -> None:  # fmt: skip
        kind = _kind(st.st_mode)
        mode = stat.S_IMODE(st.st_mode)
        size = st.st_size if kind == "file" else 0
        origin = _origin(upper_dir, name)
        if real is None:
            index = self.add(Change(path, "create", kind, size=size, mode=mode, origin=origin))
            if kind == "file":
                self.note(path, st, index, None, False, origin)
            return
        assert real_dir is not None
        real_kind = _kind(real.st_mode)
        if real_kind == "dir":
            self.deleted(real_dir, name, path, top=path)
            self.add(Change(path, "create", kind, size=size, mode=mode, opaque=True))
            return
        if kind == real_kind == "file":
            if st.st_size == real.st_size and same_bytes(upper_dir, name, real_dir, name, st.st_size):
                index = self.metadata(upper_dir, real_dir, name, path, st, real, kind)
                self.note(path, st, index, real, True, origin)
                return  # copied up with the same bytes: its metadata at most
        elif kind == real_kind == "symlink" and os.readlink(name, dir_fd=upper_dir) == os.readlink(
            name, dir_fd=real_dir
        ):
            self.metadata(upper_dir, real_dir, name, path, st, real, kind)
            return
        index = self.add(Change(path, "modify", kind, size=size, old_size=real.st_size if real_kind == "file" else 0,
                                mode=mode, old_mode=stat.S_IMODE(real.st_mode), origin=origin))  # fmt: skip
        if kind == "file":
            self.note(path, st, index, real, False, origin)

    def deleted_meanwhile(self) -> None:
        """A file the command copied up (it was in the real tree then) that is not there any more, in a directory
        someone else changed while the command ran, and that is no rename of the command's (no file it deleted has
        its size): someone deleted it meanwhile. A conflict then, not a creation."""
        if not self.started_ns:
            return
        changed = {t.path if t.path != ROOT else "" for t in self.times if t.ctime_ns > self.started_ns}
        if not changed:
            return
        deleted = {c.size for c in self.out if c.action == "delete"}
        for index, change in enumerate(self.out):
            if change.action != "create" or not change.origin or change.top or change.moved_from or change.link:
                continue
            if change.path.rpartition("/")[0] not in changed or change.size in deleted:
                continue  # nobody else changed its directory; or maybe a file the command renamed here
            self.out[index] = replace(change, gone=True)

    # -- names of one inode ----------------------------------------------------------------------------------

    def links(self) -> None:
        """Match up the names of upper files (see the module docstring: hard links, rewrites of linked files,
        moves of linked files)."""
        wanted: dict[int, list[_Name]] = {}  # real inodes with other names, whose names the root must show
        for names in self.inodes.values():
            anchor = next((n for n in names if n.same and n.real is not None), None)
            if anchor is not None:
                assert anchor.real is not None
                for other in names:
                    if other is anchor or other.index < 0:
                        continue
                    if other.real is not None and other.real.st_ino == anchor.real.st_ino:
                        continue  # already that file's name: its metadata change (if any) stays
                    self.out[other.index] = replace(self.out[other.index], link=anchor.path)
                continue
            for one in names:
                if one.real is not None and one.real.st_nlink > 1 and not one.origin and one.index >= 0:
                    wanted.setdefault(one.real.st_ino, []).append(one)
        moved, pending, reused = self.moves()
        for ino in reused:
            wanted.pop(ino, None)  # its bytes went to another name: the name that has new ones was replaced
        shared: dict[int, list[int]] = {}  # files deleted or replaced that have other names: which stays, for undo
        created = {c.path: i for i, c in enumerate(self.out) if c.action == "create" and c.opaque}
        for index, change in enumerate(self.out):
            replaced = change.top == change.path  # a file the command replaced with a directory
            if (
                change.action in ("delete", "modify")
                and change.kind != "dir"
                and (not change.top or replaced)
                and not change.link
                and change.path not in moved
            ):
                real = self.real_stat(change.path)
                if real is not None and real.st_nlink > 1:
                    shared.setdefault(real.st_ino, []).append(created[change.path] if replaced else index)
        if wanted or shared or pending:
            self.names_elsewhere(wanted, shared, pending)

    def moves(self) -> tuple[set[str], dict[int, list[int]], set[int]]:
        """A file of the command's that is a real file with other names it renamed (``mv h1 n`` with ``h2`` a hard
        link of it; a swap through a temporary name): same bytes, mode, time and attributes as the real file at a
        name the command deleted or replaced. Where that name is simply gone, the real file is renamed; else the
        path becomes another name of it (inside a tree the command made: of a name of it that stays, once the tree
        is in place). Either way its names stay one inode. Returns the names renamed away, the paths inside trees
        waiting for a name that stays (by real inode), and the real inodes found elsewhere so.

        (A copy that keeps every attribute, ``cp -a h1 n && rm h1``, looks the same on the copy, and lands as a
        rename: overlayfs keeps no trace of which it was for a file with several names.)"""
        moved: set[str] = set()
        pending: dict[int, list[int]] = {}
        reused: set[int] = set()
        lost: dict[tuple[int, int], list[tuple[Change, int]]] = {}
        for change in self.out:
            if change.kind == "file" and not change.top and change.action in ("delete", "modify"):
                real = self.real_stat(change.path)
                if real is not None and stat.S_ISREG(real.st_mode) and real.st_nlink > 1:
                    lost.setdefault((real.st_size, real.st_mtime_ns), []).append((change, real.st_ino))
        if not lost:
            return moved, pending, reused
        for found in self.inodes.values():
            if any(n.same or n.origin or n.index < 0 for n in found):
                continue
            # One name of the upper file is where the real file goes (the first outside a tree the command made);
            # its other names become names of that.
            names = sorted(found, key=lambda n: bool(self.out[n.index].top))
            one = names[0]
            change = self.out[one.index]
            upper = self.upper_stat(one.path)
            if upper is None or change.action not in ("create", "modify"):
                continue
            matches = lost.get((upper.st_size, upper.st_mtime_ns), [])
            for position, (old, ino) in enumerate(matches):
                if old.path == one.path or not self.same_file(one.path, old.path, upper):
                    continue
                del matches[position]  # one name of the real file taken over per name the command took away
                reused.add(ino)
                if change.top:
                    pending.setdefault(ino, []).extend(n.index for n in names)
                    break
                self.landed.setdefault(ino, one.path)  # where the real file is once moves are done
                if change.action == "create" and old.action == "delete" and old.path not in moved:
                    self.out[one.index] = replace(change, moved_from=old.path, origin=True)
                    moved.add(old.path)
                else:
                    self.out[one.index] = replace(change, link=old.path, link_old=True)
                for other in names[1:]:
                    self.out[other.index] = replace(self.out[other.index], link=one.path)
                break
        return moved, pending, reused

    def same_file(self, upper_path: str, real_path: str, upper: os.stat_result) -> bool:
        real = self.real_stat(real_path)
        if real is None or stat.S_IMODE(real.st_mode) != stat.S_IMODE(upper.st_mode):
            return False
        upper_at, real_at = self.parent(self.upper_root, upper_path), self.parent(self.real_root, real_path)
        with upper_at as (u_dir, u_name), real_at as (r_dir, r_name):
            if u_dir < 0 or r_dir < 0:
                return False
            if seen(at(u_dir, u_name)) != seen(at(r_dir, r_name), escaped=real_path in self.escaped):
                return False
            return same_bytes(u_dir, u_name, r_dir, r_name, upper.st_size)

    def names_elsewhere(
        self, wanted: dict[int, list[_Name]], shared: dict[int, list[int]], pending: dict[int, list[int]]
    ) -> None:
        """The other names of real files with several (one walk of the root). A file the command rewrote through one
        of its names (no copy-up of another file moved there: that is marked as one): its other names get the new
        file too, as they would natively — unless one of its names is outside the root (then only the rewritten
        name changes: nothing outside is written through a link). A file deleted or replaced under one name: a name
        that stays, for an undo to make the name one with it again."""
        # A name stays what it is unless the command deleted or replaced it (a mode change keeps it).
        gone = {c.path for c in self.out if c.action != "meta"}
        found = self.names_of({*wanted, *shared, *pending})

        def enough() -> bool:
            complete = all(len(found[ino]) >= names[0].real.st_nlink for ino, names in wanted.items() if names[0].real)
            return complete and all(any(p not in gone for p in found[ino]) for ino in (*shared, *pending))

        if not enough():
            found = self.names_of({*wanted, *shared, *pending}, everywhere=True)
        for ino, indexes in shared.items():
            staying = [p for p in found[ino] if p not in gone]
            if staying:
                for index in indexes:
                    self.out[index] = replace(self.out[index], stays=staying[0])
        for ino, indexes in pending.items():
            staying = [p for p in found[ino] if p not in gone] or ([self.landed[ino]] if ino in self.landed else [])
            if staying:
                for index in indexes:
                    self.out[index] = replace(self.out[index], link=staying[0])
        for ino, names in wanted.items():
            one = names[0]
            assert one.real is not None
            if len(found[ino]) != one.real.st_nlink:
                continue  # a name outside the root: never written through
            change = self.out[one.index]
            # Names the command left as they were on the copy (copied up for a new link: ``ln h1 n``) are the same
            # file natively: they get the new file too, and so do the new names made of them.
            kept = {name.path for names_of in self.inodes.values() for name in names_of
                    if name.index < 0 and name.real is not None and name.real.st_ino == ino}  # fmt: skip
            for path in found[ino]:
                if path in self.touched and path not in kept:
                    continue  # the command changed that name itself
                self.add(Change(path, "modify", "file", size=change.size, old_size=one.real.st_size, mode=change.mode,
                                old_mode=stat.S_IMODE(one.real.st_mode), link=one.path))  # fmt: skip
            for index, other in enumerate(self.out):
                if other.link in kept and not other.link_old:
                    self.out[index] = replace(other, link=one.path)

    def names_of(self, inodes: set[int], *, everywhere: bool = False) -> dict[int, list[str]]:
        """The names of real files ``inodes`` in the directories the command touched; ``everywhere``: in the whole
        root, at most WALK_ENTRIES paths (past that, none: no name is taken for all of them)."""
        found: dict[int, list[str]] = {ino: [] for ino in inodes}
        if everywhere:
            budget = [WALK_ENTRIES]
            for path, st in walk_real(self.real_root, "", budget):
                if st.st_ino in found and stat.S_ISREG(st.st_mode) and path not in self.skip:
                    found[st.st_ino].append(path)
            return found if budget[0] >= 0 else {ino: [] for ino in inodes}
        for directory in sorted({p.rpartition("/")[0] for p in self.touched} | {""}):
            with self.parent(self.real_root, f"{directory}/." if directory else ".") as (fd, _name):
                if fd < 0:
                    continue
                with contextlib.suppress(OSError):
                    for name in _names(fd):
                        path = f"{directory}/{name}" if directory else name
                        entry = _lstat(name, fd)
                        if entry is None or entry.st_ino not in found or path in self.skip:
                            continue
                        if stat.S_ISREG(entry.st_mode):
                            found[entry.st_ino].append(path)
        return found

    @contextlib.contextmanager
    def parent(self, base: int, path: str) -> Iterator[tuple[int, str]]:
        directory, _, name = path.rpartition("/")
        fd = base
        opened: list[int] = []
        try:
            for part in [p for p in directory.split("/") if p]:
                nxt = _open_dir(part, fd)
                if nxt is None:
                    yield -1, name
                    return
                opened.append(nxt)
                fd = nxt
            yield fd, name
        finally:
            for fd in opened:
                os.close(fd)

    def real_stat(self, path: str) -> os.stat_result | None:
        with self.parent(self.real_root, path) as (fd, name):
            return _lstat(name, fd) if fd >= 0 else None

    def upper_stat(self, path: str) -> os.stat_result | None:
        with self.parent(self.upper_root, path) as (fd, name):
            return _lstat(name, fd) if fd >= 0 else None


def read_upper(
    upper: str,
    real_root: int,
    root: str,
    skip: frozenset[str] = frozenset(),
    mounted: tuple[int, int] | None = None,
    *,
    started_ns: int = 0,
    escaped: frozenset[str] = frozenset(),
) -> ChangeSet:
    """The change set of one root: ``upper`` is the overlay's upper directory, ``real_root`` an open fd of the
    real root (both read without following a link). ``skip``: root-relative paths that are not the command's;
    ``mounted``: the mode and modification time the upper directory was given when mounted (the root's then: the
    root's own are the command's change only where they differ from those; unknown: never)."""
    upper_fd = os.open(upper, _DIR)
    try:
        reader = _Reader(real_root, upper_fd, skip, started_ns, escaped)
        own, real = os.fstat(upper_fd), os.fstat(real_root)
        if mounted is not None:
            mode, mtime = stat.S_IMODE(own.st_mode), own.st_mtime_ns
            if mode != mounted[0]:
                kept = seen(at(real_root, "."))  # its attributes: not on the upper directory, and never the command's
                reader.add(Change(ROOT, "meta", "dir", mode=mode, old_mode=stat.S_IMODE(real.st_mode),
                                  old_mtime_ns=real.st_mtime_ns, xattrs=kept, old_xattrs=kept))  # fmt: skip
            if mtime != mounted[1]:
                reader.times.append(DirTime(ROOT, mtime, real.st_ctime_ns, real.st_mtime_ns))
        reader.merged(upper_fd, real_root, "")
        reader.links()
        reader.deleted_meanwhile()
        out = tuple(replace(c, escaped=True) if c.path in escaped else c for c in reader.out) if escaped else reader.out
        return ChangeSet(root=root, upper=upper, changes=tuple(out), incomplete=reader.budget[0] < 0,
                         times=tuple(reader.times))  # fmt: skip
    finally:
        os.close(upper_fd)
