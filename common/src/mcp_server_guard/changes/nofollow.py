"""No-follow file operations beneath a root's directory fd: the primitives every apply and undo step is made of.

Every path is opened relative to a directory fd, resolved by the kernel beneath it with no symlink followed
(``openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)``, or one ``O_NOFOLLOW`` name at a time where openat2 is
missing): a link planted since, anywhere on the path, raises :class:`Changed` — a conflict, never a way out. A
regular file is replaced or removed only while its flock is held and the name still is that file
(:func:`held`); what is there is checked against the command's start, taken by :func:`now_ns` (:func:`unchanged`);
a running job's file is copied, never opened unless regular, and only if it is the very file judged
(:func:`copy_beside`).

Threat: a confused deputy — the server, placing a command's files with its own rights, led by a link or a swap
to write, replace or remove something outside the root. Not here: which steps an apply takes and in what order
(``changes.plan``), nor what each step does with the history (``changes.steps``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import stat
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from mcp_server_guard import linux
from mcp_server_guard.changes import name_changes
from mcp_server_guard.changes.changeset import MAX_ENTRIES, Kind, TooDeep, walk_real
from mcp_server_guard.changes.xattrs import Xattrs, set_seen
from mcp_server_guard.files import openat2 as _openat2
from mcp_server_guard.files.copying import WrittenMeanwhile, as_owner, open_as_owner, open_to_read, owner_writes
from mcp_server_guard.files.kept import disk_usage
from mcp_server_guard.files.treelock import flock_until
from mcp_server_guard.files.trees import as_found, granting, open_own_dir, own_dirs_as_found, settled

if TYPE_CHECKING:
    from mcp_server_guard.changes.plan import Applied

__all__ = [
    "DIR",
    "Changed",
    "copy_beside",
    "default_acl_above",
    "free_name_beside",
    "held",
    "identity",
    "lstat_at",
    "lstat_beneath",
    "missing_parent",
    "now_ns",
    "open_dir",
    "parent",
    "rename_at",
    "set_meta",
    "syncfs",
    "unchanged",
    "unchanged_tree",
]

_RESOLVE = _openat2.RESOLVE_BENEATH | _openat2.RESOLVE_NO_SYMLINKS | _openat2.RESOLVE_NO_MAGICLINKS
DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC  # a directory, opened to act beneath it
_RENAME_NOREPLACE = 1
_LOCK_WAIT_S = 2.0  # our writers hold a file's flock only to copy it (never while waiting for the tree lock)


def now_ns() -> int:
    """Now, to compare with file ctimes: the real-time clock itself (file systems stamp changes with it, coarsely
    or finely: a change made before this moment never looks later; one made in the same clock tick after it may
    look earlier, and is then kept in the history rather than set beside)."""
    return time.time_ns()


class Changed(Exception):
    """The real tree is not as the command found it at this path. ``done``: what the step did before it found that
    (what it kept, recorded so that it can be undone or gone back on)."""

    def __init__(self, why: str = "", done: Sequence[Applied] = ()) -> None:
        super().__init__(why)
        self.done = list(done)


def identity(st: os.stat_result) -> tuple[int, ...]:
    """What we left at a path: its inode, and its modification time and size then (a rename, ours or an undo's,
    keeps them; a write changes them — one in the same clock tick as ours that keeps the size is the one thing
    this cannot see)."""
    return st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size


def lstat_at(name: str, dirfd: int) -> os.stat_result | None:
    """What is at ``name`` in ``dirfd``, no link followed; None when nothing is."""
    try:
        return os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None


_PATH_CHUNK = 3072  # bytes of a path resolved in one openat2 (the kernel takes at most PATH_MAX, 4,096)


def open_dir(base: int, rel: str) -> int:
    """A directory beneath ``base``, every component checked by the kernel: no symlink, no escape. At any depth:
    a path longer than the kernel takes in one call is resolved a part at a time, each beneath the directory the
    part before it opened."""
    if len(os.fsencode(rel)) > _PATH_CHUNK:
        return _open_deep(base, [p for p in rel.split("/") if p])
    try:
        if _openat2.available():
            fd = _openat2.openat2(base, rel or ".", DIR, _RESOLVE)
            if not (granting() and _unsearchable(fd)):
                return fd
            os.close(fd)  # (one of the user's it may read but not search, ``chmod 644 d``: let in below)
    except OSError as exc:
        # (Within an apply or an undo, a directory of the user's they may not enter or write is let in for it:
        # the part-at-a-time walk below, no link followed either.)
        if exc.errno != errno.ENOSYS and not (exc.errno == errno.EACCES and granting()):
            raise Changed(f"its directory changed ({exc.strerror})") from None
    fd = os.dup(base)
    try:
        for part in [p for p in rel.split("/") if p]:
            if part in (".", ".."):
                raise Changed("an odd path")
            try:
                nxt = open_own_dir(part, fd, real=0o700)
            except OSError as exc:
                raise Changed(f"its directory changed ({exc.strerror})") from None
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def _unsearchable(fd: int) -> bool:
    st = os.fstat(fd)
    return st.st_uid == os.geteuid() and not st.st_mode & stat.S_IXUSR


def _open_deep(base: int, parts: list[str]) -> int:
    fd = os.dup(base)
    try:
        chunk: list[str] = []
        size = 0
        for part in [*parts, ""]:
            length = len(os.fsencode(part)) + 1
            if chunk and (not part or size + length > _PATH_CHUNK):
                nxt = open_dir(fd, "/".join(chunk))
                os.close(fd)
                fd, chunk, size = nxt, [], 0
            if part:
                chunk.append(part)
                size += length
    except BaseException:
        os.close(fd)
        raise
    return fd


def default_acl_above(root: str, rel: str, cache: dict[str, bytes | None]) -> bytes | None:
    """The default ACL of the nearest directory above ``rel`` that exists in the real tree (what a new entry there
    inherits), reached beneath ``root`` with no link followed; None when it has none."""
    directory = posixpath.dirname(rel)
    missing: list[str] = []  # directories on the way that the real tree does not have: the answer is theirs too
    while True:
        if directory in cache:
            cache.update(dict.fromkeys(missing, cache[directory]))
            return cache[directory]
        found: bytes | None = None
        exists = False
        with contextlib.suppress(OSError, Changed):
            fd = os.open(root, DIR)
            try:
                inner = open_dir(fd, directory) if directory else os.dup(fd)
                exists = True
                try:
                    with contextlib.suppress(OSError):
                        found = os.getxattr(inner, "system.posix_acl_default")
                finally:
                    os.close(inner)
            finally:
                os.close(fd)
        if exists or not directory:
            cache.update(dict.fromkeys([*missing, directory], found))
            return found
        missing.append(directory)
        directory = posixpath.dirname(directory)


def lstat_beneath(root: str, rel: str) -> os.stat_result | None:
    """What is at ``rel`` beneath the directory ``root`` now (``.``: the root itself), reached with no link followed;
    None when it is not there or cannot be reached that way."""
    try:
        fd = os.open(root, DIR)
    except OSError:
        return None
    try:
        if rel in (".", ""):
            return os.fstat(fd)
        with parent(fd, rel) as (dirfd, name):
            return lstat_at(name, dirfd)
    except (OSError, Changed):
        return None
    finally:
        os.close(fd)


class TooMany(Exception):
    """``entries_below`` could not look at everything: past its limit, or a directory it could not open or read
    (the caller fails closed)."""


def entries_below(root: str, rel: str, limit: int = 5_000) -> Iterator[tuple[str, Kind]]:
    """The root-relative paths of the files, directories and symlinks below the directory ``rel`` beneath ``root``
    now, with their kinds, nearest first (reached with no link followed). ``limit`` entries at most: reaching it,
    or a directory below that cannot be read, raises ``TooMany`` once the rest is yielded (threat: a tree padded
    past the bound, or a directory made unreadable, hid what it holds)."""
    try:
        base = os.open(root, DIR)
    except OSError:
        return
    try:
        start = "" if rel in (".", "") else rel
        todo, unseen = [start], False
        while todo and limit > 0:
            directory = todo.pop(0)
            try:
                fd = open_dir(base, directory)
            except (OSError, Changed):
                unseen = unseen or directory != start  # ``rel`` itself may be new: nothing of it to look at yet
                continue
            try:
                with os.scandir(fd) as entries:
                    found = [(e.name, e.is_dir(follow_symlinks=False), e.is_file(follow_symlinks=False),
                              e.is_symlink()) for _, e in zip(range(limit), entries, strict=False)]  # fmt: skip
            except OSError:
                found, unseen = [], True
            finally:
                os.close(fd)
            limit -= len(found)
            for name, is_dir, is_file, is_link in found:
                path = posixpath.join(directory, name) if directory else name
                if is_dir:
                    todo.append(path)
                yield path, "dir" if is_dir else "file" if is_file else "symlink" if is_link else "fifo"
        if limit <= 0 or unseen:
            raise TooMany
    finally:
        os.close(base)


@contextlib.contextmanager
def parent(base: int, rel: str) -> Iterator[tuple[int, str]]:
    """The directory holding ``rel``, opened beneath ``base`` (:func:`open_dir`), and ``rel``'s last name."""
    directory, _, name = rel.rpartition("/")
    fd = open_dir(base, directory)
    try:
        yield fd, name
    finally:
        os.close(fd)


@contextlib.contextmanager
def held(dirfd: int, name: str, st: os.stat_result) -> Iterator[int | None]:
    """For a regular file: hold its flock (file_write's writers take turns on it) while we replace or remove it,
    and make sure the name still is that file, as ``st`` shows it; gives its descriptor (None: anything else,
    never opened). A pre-image kept meanwhile that was written while it was copied (``kept.keep_data``) is a
    change made meanwhile."""
    with _locked(dirfd, name, st) as fd:
        try:
            yield fd
        except WrittenMeanwhile as exc:
            raise Changed(str(exc)) from None


@contextlib.contextmanager
def _locked(dirfd: int, name: str, st: os.stat_result) -> Iterator[int | None]:
    if not stat.S_ISREG(st.st_mode):
        yield None
        return
    lockable = True
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dirfd)
    except PermissionError:
        # A file its owner cannot read (mode 000: a key locked down; 0200: a drop box) is not a change (red team 60
        # F2: a false conflict, an undo refused): held by an O_PATH descriptor, unlocked — no writer of ours can
        # open it to hold its lock either — and checked as any other below.
        lockable = False
        try:
            fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dirfd)
        except OSError as exc:
            raise Changed(f"it changed ({exc.strerror})") from None
    except OSError as exc:
        raise Changed(f"it changed ({exc.strerror})") from None
    try:
        if lockable and not flock_until(fd, time.monotonic() + _LOCK_WAIT_S, 0.002):
            raise Changed("another writer held it")
        now = lstat_at(name, dirfd)
        locked = os.fstat(fd)
        if now is None or (now.st_dev, now.st_ino) != (locked.st_dev, locked.st_ino):
            raise Changed("it was replaced meanwhile")
        # Threat: a write made while we waited for the lock (a writer holding it appends) taken for the file as
        # looked at, and replaced or removed with it (red team 10 F1, F6): its ctime is as looked at, or moved since
        # only by names this process made.
        if locked.st_ctime_ns != st.st_ctime_ns and not name_changes.only_names(locked, st.st_ctime_ns, exactly=True):
            raise Changed("it changed meanwhile")
        yield fd
    finally:
        os.close(fd)


def unchanged_tree(
    dirfd: int,
    name: str,
    since_ns: int,
    ours: Collection[tuple[int, int]] = (),
    linked: list[tuple[str, int, int]] | None = None,
    left: Mapping[str, int] | None = None,
    at: str = "",
) -> tuple[int, int]:
    """(paths, bytes) of the real tree ``name``; raises Changed when anything in it changed at or after
    ``since_ns`` — but files in ``ours`` (inodes whose ctime this run changed: a new name made of one), and paths a
    running job's earlier looks applied (``left``: absolute path -> its ctime then; ``at``: the absolute path of
    the directory ``dirfd``), which count from then. ``linked`` (filled in): the files in it with a name outside
    it, (path in the tree, device, inode)."""
    left = left or {}

    def since(path: str) -> int:
        return max(since_ns, left.get(posixpath.join(at, path), since_ns)) if left else since_ns

    with own_dirs_as_found(name_changes.note):  # (one of the user's with no permission looked into, mode put back)
        return _unchanged_tree(dirfd, name, ours, linked, since)


def _unchanged_tree(
    dirfd: int,
    name: str,
    ours: Collection[tuple[int, int]],
    linked: list[tuple[str, int, int]] | None,
    since: Callable[[str], int],
) -> tuple[int, int]:
    try:
        # What the directory was before anything let it in (its ctime then), and that very directory opened.
        before = as_found(os.stat(name, dir_fd=dirfd, follow_symlinks=False))
        fd = open_own_dir(name, dirfd, real=0o500)
    except OSError as exc:
        raise Changed(f"it changed ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino) or (
            before.st_ctime_ns > since(name) and not name_changes.only_names(before, since(name))
        ):
            raise Changed("it changed after the command started")
        budget = [MAX_ENTRIES]
        count = size = 0
        several: list[tuple[str, int, int, int]] = []  # files with several names: (path in the tree, dev, ino, nlink)
        try:
            for path, found in walk_real(fd, name, budget):
                st = as_found(found) if stat.S_ISDIR(found.st_mode) else found
                if (
                    st.st_ctime_ns > since(path)
                    and not (stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) in ours)
                    and not name_changes.only_names(st, since(path))  # another call's name of it (red team 9 F3)
                ):
                    raise Changed(f"{path} changed after the command started")
                if (
                    linked is not None
                    and stat.S_ISREG(st.st_mode)
                    and (st.st_nlink > 1 or (st.st_dev, st.st_ino) in ours)
                ):
                    several.append((path[len(name) + 1 :], st.st_dev, st.st_ino, st.st_nlink))
                count += 1
                # What it takes on disk, directories and links too (15,000 empty directories are 60 MB of a
                # history store's bound, not 0).
                size += disk_usage(st) if stat.S_ISREG(st.st_mode) else st.st_blocks * 512
        except TooDeep:
            raise Changed("it is too deep to check") from None
        if budget[0] < 0:
            raise Changed("it is too large to check")
        if linked is not None and several:
            # Only files with a name outside the tree: names all inside it move with it and stay one file. (And
            # those whose other names this run took away before: red team 57 F1, ``rm keep.txt; rm -r tree`` of a
            # file named in both; an undo makes the names one file again.)
            inside = Counter((dev, ino) for _rel, dev, ino, _n in several)
            linked += [(rel, dev, ino) for rel, dev, ino, nlink in several
                       if inside[(dev, ino)] < nlink or (dev, ino) in ours]  # fmt: skip
        return count, size
    finally:
        os.close(fd)


def unchanged(
    dirfd: int,
    name: str,
    real: os.stat_result,
    since_ns: int,
    left: int | None = None,
    ours: Collection[tuple[int, int]] = (),
    linked: list[tuple[str, int, int]] | None = None,
    tree_left: Mapping[str, int] | None = None,
    at: str = "",
) -> tuple[int, int]:
    """Raise Changed unless what is at ``name`` is as the command found it (or, ``left``, as an earlier apply of
    the same running job left it: its ctime then); returns a tree's (paths, bytes). ``ours``, ``linked``,
    ``tree_left`` (its ``left``), ``at``: see unchanged_tree."""
    if stat.S_ISDIR(real.st_mode):
        return unchanged_tree(dirfd, name, since_ns, ours, linked, tree_left, at)
    # Threat: applying over someone else's change made while the command ran. A name another call of ours made or
    # took away of the same file moved its ctime only: no change (red team 9 F3).
    if left is not None:
        if real.st_ctime_ns != left and not name_changes.only_names(real, left, exactly=True):
            raise Changed("it changed after the job's changes were applied")
    elif real.st_ctime_ns > since_ns and not name_changes.only_names(real, since_ns):
        raise Changed("it changed after the command started")
    return (0, 0)


def copy_beside(src_dir: int, name: str, st: os.stat_result, dst_dir: int, temp: str) -> str | None:
    """Copy a running job's file, symlink or FIFO (never opened unless a regular file) to the temp name ``temp``
    beside its target (one a copy killed before left is replaced); None when it changed while copied (it is still
    being written)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temp, dir_fd=dst_dir)
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(name, dir_fd=src_dir)
        except OSError:
            return None  # no longer a symlink: the job changed it; the next look judges it again
        os.symlink(target, temp, dir_fd=dst_dir)
        return temp
    if stat.S_ISFIFO(st.st_mode):
        os.mkfifo(temp, stat.S_IMODE(st.st_mode), dir_fd=dst_dir)
        return temp
    if not stat.S_ISREG(st.st_mode):
        raise Changed("not a file that can be copied")
    try:
        src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=src_dir)
    except OSError:
        return None
    try:
        opened = os.fstat(src)
        # Threat: the job swapping what it judged (a symlink, a plain file) for another file (an executable)
        # between the judgement and this copy: only the very file judged is copied.
        if (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino) or not stat.S_ISREG(opened.st_mode):
            return None
        out = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dst_dir)
        try:
            linux.copy_data(src, out, opened.st_size)  # holes kept (red team 7 F1)
            os.fchmod(out, stat.S_IMODE(st.st_mode))
            os.utime(out, ns=(st.st_atime_ns, st.st_mtime_ns))
        finally:
            os.close(out)
        after = os.fstat(src)
    finally:
        os.close(src)
    if (after.st_size, after.st_mtime_ns, after.st_ctime_ns) != (st.st_size, st.st_mtime_ns, st.st_ctime_ns):
        os.unlink(temp, dir_fd=dst_dir)
        return None
    return temp


_NAME_MAX = 255  # bytes in one name


def beside_name(name: str, audit_id: str, n: int = 0) -> str:
    """``<name>.mcp-guard-<auditId>`` (``-<n>``), the name cut (in bytes, not inside a UTF-8 character) where the
    whole would pass NAME_MAX: a conflict on a long name still keeps the command's version beside it."""
    suffix = f".mcp-guard-{audit_id}" + (f"-{n}" if n else "")
    raw = os.fsencode(name)
    room = _NAME_MAX - len(suffix.encode())
    if len(raw) > room:
        raw = raw[:room]
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            if exc.start >= len(raw) - 3:  # the last character was cut in two
                raw = raw[: exc.start]
    return os.fsdecode(raw) + suffix


def free_name_beside(name: str, audit_id: str, dirfd: int) -> str:
    """A free name beside ``name`` for the command's version: ``<name>.mcp-guard-<auditId>`` (then ``-1``...)."""
    for n in range(100):
        candidate = beside_name(name, audit_id, n)
        if lstat_at(candidate, dirfd) is None:
            return candidate
    raise OSError(errno.EEXIST, "no free name beside it")


def rename_at(src_dir: int, src: str, dst_dir: int, dst: str, *, noreplace: bool) -> None:
    """Rename between directory fds; ``noreplace``: FileExistsError rather than replace what is there. A directory
    its owner (this user) may not write in the way — one the command wrote a file into in place or made read-only
    (``chmod 555 d``), or a read-only directory of the command's moved into place (a move to another directory
    writes its ``..``) — is given u+w for the rename and its mode put back: natively the command's writes needed
    no such right (red team 62 F4: they were conflicts, the command's bytes dropped)."""
    if noreplace:
        as_owner(lambda: linux.renameat2(src_dir, src, dst_dir, dst, _RENAME_NOREPLACE), src_dir, dst_dir,
                 (src_dir, src), after=(dst_dir, dst))  # fmt: skip
    else:
        as_owner(lambda: os.rename(src, dst, src_dir_fd=src_dir, dst_dir_fd=dst_dir), src_dir, dst_dir, (src_dir, src),
                 after=(dst_dir, dst))  # fmt: skip


def syncfs(fd: int) -> None:
    """Flush the file system holding ``fd`` to disk, where the kernel lets us (errors ignored)."""
    with contextlib.suppress(OSError, AttributeError):
        linux.syncfs(fd)


def set_meta(dirfd: int, name: str, real: os.stat_result, mode: int, mtime_ns: int, want: Xattrs,
              have: Xattrs) -> None:  # fmt: skip
    """A path's attributes, mode and (not a directory's) modification time set, in that order (each of the first two
    changes only its ctime). Threat: the name swapped for a symlink since it was looked at (by another writer of
    the real tree), leading the change outside: a file or directory is changed through a descriptor of the very
    inode looked at (never followed), a symlink by its name with no link followed (it takes no mode)."""
    # (Every caller passes a time: 0 is the epoch, which reproducible builds set — fuzz 21 F6 — not "none".)
    if stat.S_ISLNK(real.st_mode):
        if real.st_mtime_ns != mtime_ns:
            os.utime(name, ns=(real.st_atime_ns, mtime_ns), dir_fd=dirfd, follow_symlinks=False)
        return
    try:
        fd = open_to_read(dirfd, name, real)  # (one its owner may not read too: ``chmod 000 d`` undone, red team 62 F5)
    except OSError as exc:
        raise Changed(f"it changed ({exc.strerror})") from None
    try:
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != (real.st_dev, real.st_ino) or not (
            stat.S_ISDIR(opened.st_mode) or stat.S_ISREG(opened.st_mode)
        ):
            raise Changed("it was replaced meanwhile")
        if want != have:
            # A user.* attribute is written as the entry is: one of this user's it may not write (``chmod 444``,
            # 555) gets u+w for it, its mode put back (red team 63 F5: a conflict, the attribute not set).
            with owner_writes(fd, files=True):
                set_seen(fd, want, have)
        if stat.S_IMODE(opened.st_mode) != mode or as_found(opened) is not opened:
            os.fchmod(fd, mode)
            settled(opened, mode)  # (a directory let in for this apply or undo: that mode at the end)
        if not stat.S_ISDIR(opened.st_mode) and opened.st_mtime_ns != mtime_ns:
            os.utime(fd, ns=(opened.st_atime_ns, mtime_ns))
    finally:
        os.close(fd)


def thin_copy_up(ours_at: tuple[int, str], ours: os.stat_result) -> None:
    """The command's file ``ours`` (at ``ours_at``), copied up by overlayfs from a sparse real file and landing at a
    name where no real file is (a rename: ``mv disk.img d/``): its blocks of zeros made holes again, as the renamed
    real file had them natively (red team 61 F2: 0.5 MiB landed as 128 MiB). Only a file with holes (a copy-up
    keeps those of a MiB or more); opened no link followed, the very file looked at (a read-only one as its owner
    may: red team 62)."""
    if not stat.S_ISREG(ours.st_mode) or ours.st_blocks * 512 >= ours.st_size:
        return
    try:
        new = open_as_owner(ours_at[0], ours_at[1], ours, write=True)
    except OSError:
        return
    try:
        if os.fstat(new).st_ino == ours.st_ino and linux.punch_zeros(new, ours.st_size):
            os.utime(new, ns=(ours.st_atime_ns, ours.st_mtime_ns))  # the time the command left
    finally:
        os.close(new)


def thin_like(ours_at: tuple[int, str], ours: os.stat_result, real_at: tuple[int, str], real: os.stat_result) -> None:
    """The command's file ``ours`` (at ``ours_at``: directory, name), about to land over the sparse real file
    ``real`` (at ``real_at``): the zeros overlayfs's copy-up wrote for the real file's holes made holes again (red
    team 9 F1: a scattered disk image changed in place lands as sparse as natively). Both opened no link followed,
    and only the very files looked at; a file it cannot write (read-only) stays as it is."""
    if not (stat.S_ISREG(ours.st_mode) and stat.S_ISREG(real.st_mode)) or real.st_blocks * 512 >= real.st_size:
        return
    flags = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        old = os.open(real_at[1], os.O_RDONLY | flags, dir_fd=real_at[0])
    except OSError:
        return
    try:
        new = os.open(ours_at[1], os.O_RDWR | flags, dir_fd=ours_at[0])
    except OSError:
        os.close(old)
        return
    try:
        if (os.fstat(old).st_ino, os.fstat(new).st_ino) != (real.st_ino, ours.st_ino):
            return
        if linux.punch_like(new, old, min(real.st_size, ours.st_size)):
            os.utime(new, ns=(ours.st_atime_ns, ours.st_mtime_ns))  # the time the command left
    finally:
        os.close(old)
        os.close(new)


def missing_parent(root_fd: int, rel: str) -> bool:
    """Whether a directory on the way to ``rel`` is simply not there, or not a directory (a deletion inside a deleted
    or replaced tree)."""
    parts = rel.split("/")[:-1]
    for depth in range(len(parts), 0, -1):
        with contextlib.suppress(Changed), parent(root_fd, "/".join(parts[:depth])) as (dirfd, name):
            st = lstat_at(name, dirfd)
            return st is None or not stat.S_ISDIR(st.st_mode)
    return False
