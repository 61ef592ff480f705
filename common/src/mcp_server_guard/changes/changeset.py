"""What a command changed, as data — one :class:`Change` per path, the directories' times (:class:`DirTime`), a
root's whole :class:`ChangeSet` — and the no-follow walk every reader of a tree a command shaped uses.

A walk never follows a link (each name is opened on its own, ``O_NOFOLLOW``, from its directory's fd, at any
depth), never opens anything but a directory or a regular file, and opens files ``O_NONBLOCK``; a tree thousands
of levels deep is refused (:class:`TooDeep`).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Literal, NamedTuple, cast

from mcp_server_guard.changes.xattrs import Xattrs
from mcp_server_guard.files.copying import open_to_read
from mcp_server_guard.files.kept import file_kind
from mcp_server_guard.files.trees import open_own_dir
from mcp_server_guard.paths import moving_copy

__all__ = [
    "COUNTED_FILES",
    "COUNTED_UNBACKED",
    "MADE",
    "MAX_DEPTH",
    "MAX_ENTRIES",
    "NO_FOLLOW_DIR",
    "ROOT",
    "Action",
    "Change",
    "ChangeSet",
    "DirTime",
    "Kind",
    "Mounted",
    "TooDeep",
    "depth",
    "kind_of",
    "listing",
    "looked_under",
    "lstat",
    "mounted_note",
    "open_dir",
    "same_bytes",
    "walk_entries",
    "walk_real",
]

Action = Literal["create", "modify", "delete", "meta"]
Kind = Literal["file", "dir", "symlink", "fifo", "socket", "device"]

MAX_ENTRIES = 200_000  # paths one change set lists at most (created and deleted trees included)
MAX_DEPTH = 128  # levels below a root a changed path may have
# In a running job's baseline, before an absolute path: a path a look made (a file or directory the real tree did
# not have), not one whose mode or time it set (never part of a path: a path holds no NUL).
MADE = "\0made:"
# In a job's baseline too: what its looks counted for the counted questions (``effects.Judgement.touched``,
# ``unbacked``), added up look by look.
COUNTED_FILES = "\0counted:files"
COUNTED_UNBACKED = "\0counted:unbacked"
ROOT = "."  # the root itself, as a change's path (its mode and attributes; its modification time)
NO_FOLLOW_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
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
    inode: int = 0  # meta of a file with several names: its inode (the change reaches each name; judged together)
    # The real entry's own user.overlay.* attributes were shown to the command (the escape layer): what its upper
    # entry holds of them (escaped) is what the command left, none included.
    shown: bool = False
    names: int = 0  # delete inside a deleted tree: the names the file had, where several (its entry lists them)
    over: bool = False  # modify: another file was renamed over this name (``mv -f a b``): it brings its attributes

    @property
    def executable(self) -> bool:
        return self.kind == "file" and bool(self.mode & 0o111)


@dataclass(frozen=True)
class Renamed:
    """What the box's rename handler said of a call's renames (``shell.sandbox.renames``)."""

    linked: frozenset[int] = frozenset()  # upper inodes of names of linked files its tree moves made
    # Where regular files it renamed are at the call's end (absolute paths, as in the box: each root's copy is
    # mounted at the root's path). One at a real file's name is that file replaced (``mv -f p acl``), not rewritten
    # in place, whatever its bytes: it lands with its own attributes and ACL (``Change.over``).
    files: frozenset[str] = frozenset()
    # Files with several names it renamed (``mv h1 n``): where each is at the call's end, where it was renamed from,
    # and its inode number there as the copy showed it (the project's file where that is the real file's there).
    origins: frozenset[tuple[str, str, int]] = frozenset()
    # Whether the box's rename helper said its renames of files with several names (then one it did not name as
    # renamed was not: a name holding such a file's bytes is a copy, ``cp -p``)
    origins_known: bool = False
    # Names of files with several names it removed and made again in place, not by a rename (``rm h1 && cp -p b h1``:
    # ``shell.sandbox.unlinks``): each holds a file of its own, as one renamed there does.
    remade: frozenset[str] = frozenset()
    # Names the call removed, renamed or replaced that hold some name's file (linked or renamed from there), with that
    # name: the same file where that name is one of the real file at the name (``rm h1 && ln h2 h1 && rm h2``).
    relinked: frozenset[tuple[str, str]] = frozenset()
    # Whether the names of files with several names could not be followed (events lost: more than the watch could
    # read, red team 54 F2): then every such name the call left changed holds a file of its own (nothing it did
    # reaches the file's other names, which keep it as it was).
    unfollowed: bool = False

    def files_in(self, root: str) -> frozenset[str]:
        """``files`` under ``root``, relative to it."""
        return _under(self.files, root)

    def remade_in(self, root: str) -> frozenset[str]:
        """``remade`` under ``root``, relative to it."""
        return _under(self.remade, root)

    def relinked_in(self, root: str) -> dict[str, str]:
        """``relinked`` under ``root``, relative to it (a source outside it: "")."""
        top = root.rstrip("/") + "/"
        return {
            now[len(top) :]: source[len(top) :] if source.startswith(top) else ""
            for now, source in self.relinked
            if now.startswith(top)
        }

    def origins_in(self, root: str) -> dict[str, tuple[str, int]]:
        """``origins`` under ``root``, relative to it: where a file is -> (where it came from, its inode there)."""
        top = root.rstrip("/") + "/"
        return {
            now[len(top) :]: (source[len(top) :], ino)
            for now, source, ino in self.origins
            if now.startswith(top) and source.startswith(top)
        }


NO_RENAMES = Renamed()


def _under(paths: frozenset[str], root: str) -> frozenset[str]:
    top = root.rstrip("/") + "/"
    return frozenset(path[len(top) :] for path in paths if path.startswith(top))


class Mounted(NamedTuple):
    """What a copy's upper root was given when mounted (``shell.sandbox.overlays.mounted_note``): the root's mode,
    modification time and ``user.*`` attributes then (sorted) — the root's own are the command's change only where
    they differ from those."""

    mode: int
    mtime_ns: int
    xattrs: Xattrs = ()


@dataclass(frozen=True)
class DirTime:
    """A directory the command touched: the modification time it left (put back once its entries are applied)."""

    path: str  # root-relative; ROOT for the root
    mtime_ns: int
    ctime_ns: int  # the real directory's change time when read (-1: a directory the command made)
    old_mtime_ns: int = 0  # the real directory's modification time when read

    def set_on_purpose(self, started_ns: int) -> bool:
        """Set to before the command started (``touch -d 2001-01-01 d``), not merely moved on by entries made and
        removed in it: a change of its own, applied and recorded (undo puts it back)."""
        return self.mtime_ns < started_ns and self.mtime_ns != self.old_mtime_ns


@dataclass(frozen=True)
class ChangeSet:
    """Everything one command changed under one root."""

    root: str  # the real root
    upper: str  # its upper directory
    changes: tuple[Change, ...] = ()
    incomplete: bool = False  # more than MAX_ENTRIES paths: the list is cut, the judgement must not trust it
    times: tuple[DirTime, ...] = ()
    dropped: tuple[tuple[str, str], ...] = ()  # (path, the user.overlay.* names the command set there: never applied)
    marked: frozenset[str] = frozenset()  # paths whose upper entry carries attributes to take away before landing
    carried: frozenset[tuple[str, bytes]] = frozenset()  # the project's own user.overlay.* attributes (data)

    def __bool__(self) -> bool:
        return bool(self.changes)


def kind_of(mode: int) -> Kind:
    return cast(Kind, file_kind(mode))


def lstat(name: str, dirfd: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None


def open_dir(name: str, dirfd: int, *, ours: bool = False) -> int | None:
    """A directory below ``dirfd`` (no link followed); None when it is gone or not a directory. ``ours``: the
    upper layer, whose directories are this user's (one with no permission is let in: ``open_own_dir``); a real
    directory of this user's with no permission is let in to be looked at within ``trees.own_dirs_as_found``."""
    try:
        return open_own_dir(name, dirfd, real=0 if ours else 0o500)
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
            raise
        return None


class TooDeep(ValueError):
    """A change set with paths more than MAX_DEPTH levels deep: not read, not applied."""


def depth(path: str) -> int:
    depth = path.count("/") + 1
    if depth > MAX_DEPTH:
        # Threat: a tree thousands of levels deep (mkdir -p d/d/d/…) exhausting the reader's stack or descriptors,
        # or the applier's; no project needs one this deep.
        raise TooDeep(f"a path more than {MAX_DEPTH} levels deep: {path[:80]}…")
    return depth


def listing(fd: int) -> list[str]:
    with os.scandir(fd) as entries:
        return sorted(entry.name for entry in entries)


_RESERVED = 64 << 10


def reserved_more(st: os.stat_result, real: os.stat_result) -> bool:
    """Whether the command reserved space in a file beyond its end (``fallocate -n``, ``FALLOC_FL_KEEP_SIZE``: a
    database or download manager making a later write safe from a full disk), more than the real file has: a change
    of the file, landed whole, though its bytes are the same (red team 9 F2)."""
    return st.st_blocks * 512 - st.st_size > max(real.st_blocks * 512 - real.st_size, 0) + _RESERVED


def same_bytes(a_dir: int, a_name: str, b_dir: int, b_name: str, size: int, *, as_owner: bool = False) -> bool:
    """Whether two regular files hold the same bytes (opened without following or blocking; ``as_owner``: one its
    owner may not read too, ``copying.open_to_read`` — an undo's, not a judgement's: it moves the file's ctime)."""

    def opened(dirfd: int, name: str) -> int:
        return open_to_read(dirfd, name) if as_owner else os.open(name, _FILE, dir_fd=dirfd)

    try:
        a = opened(a_dir, a_name)
    except OSError:
        return False
    try:
        try:
            b = opened(b_dir, b_name)
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


def walk_entries(
    dirfd: int, prefix: str, budget: list[int], *, ours: bool = False
) -> Iterator[tuple[str, os.stat_result, int, str]]:
    """Every path below an open directory (not following links), ``prefix``-relative, depth first, with the open
    directory that holds it and its name there (valid until the next step: never a path, whatever its depth);
    stops when ``budget[0]`` runs out. ``ours``: the tree is an upper layer (see _open_dir).

    A directory is opened only when its turn comes, from its parent, which stays open while it has children still
    to walk: about one descriptor per level. Threat: a directory with more subdirectories than the descriptor limit
    (a node_modules/) failed the whole change set with EMFILE."""
    stack: list[tuple[list[int], str, str]] = []  # (parent [fd, references], name, path) still to walk
    current: list[int] | None = [os.dup(dirfd), 1]
    rel = prefix
    try:
        while True:
            if current is not None:
                try:
                    for name in listing(current[0]):
                        st = lstat(name, current[0])
                        if st is None or (ours and moving_copy(name, stat.S_ISDIR(st.st_mode))):  # the helper's
                            continue
                        budget[0] -= 1
                        if budget[0] < 0:
                            return
                        path = f"{rel}/{name}" if rel else name
                        depth(path)
                        yield path, st, current[0], name
                        if stat.S_ISDIR(st.st_mode):
                            current[1] += 1
                            stack.append((current, name, path))
                finally:
                    _release(current)
            if not stack:
                return
            parent, name, rel = stack.pop()
            try:
                child = open_dir(name, parent[0], ours=ours)
            finally:
                _release(parent)
            current = [child, 1] if child is not None else None
    finally:
        for parent, _name, _path in stack:
            _release(parent)


def _release(held: list[int]) -> None:
    """One reference fewer to an open directory of ``walk_entries``; closed at the last."""
    held[1] -= 1
    if held[1] == 0:
        os.close(held[0])


def walk_real(
    dirfd: int, prefix: str, budget: list[int], *, ours: bool = False
) -> Generator[tuple[str, os.stat_result], None, None]:
    """Every path below an open directory (see :func:`walk_entries`), with what it is."""
    for path, st, _fd, _name in walk_entries(dirfd, prefix, budget, ours=ours):
        yield path, st


def looked_under(baseline: dict[str, int] | None, root: str) -> dict[str, int]:
    """A job's baseline (absolute paths) as paths relative to ``root`` (``.``: the root itself; a path a look made
    keeps its ``MADE`` mark)."""
    found: dict[str, int] = {}
    inside = root.rstrip("/") + "/"
    for key, ctime in (baseline or {}).items():
        mark, path = (MADE, key[len(MADE) :]) if key.startswith(MADE) else ("", key)
        if path == root:
            found[mark + "."] = ctime
        elif path.startswith(inside):
            found[mark + path[len(inside) :]] = ctime
    return found


_NOTE_MAX = 8 << 20  # bytes of a copy's ``m<i>`` note read at most (its root's attributes, in hex)


def mounted_note(path: str) -> Mounted | None:
    """The mode, modification time and ``user.*`` attributes a copy's upper root was given when mounted
    (``overlays.mounted_note``)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        chunks: list[bytes] = []
        while (chunk := os.read(fd, 1 << 16)) and sum(map(len, chunks)) < _NOTE_MAX:
            chunks.append(chunk)
        first, _, rest = b"".join(chunks).partition(b"\n")
        mode, mtime = first.split()
        pairs = []
        for pair in rest.split():
            name, value = pair.split(b"=")
            pairs.append(
                (bytes.fromhex(name.decode()).decode("utf-8", "surrogateescape"), bytes.fromhex(value.decode()))
            )
        return Mounted(int(mode), int(mtime), tuple(sorted(pairs)))
    except ValueError:
        return None
    finally:
        os.close(fd)
