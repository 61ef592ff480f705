"""Directory moves on the copy the box's rename helper makes where overlayfs answers ``EXDEV`` (``renames``): the
tree copied the way ``mv`` copies across file systems — under a temporary name beside the target (modes, times,
symlinks, FIFOs and sockets, ``user.*`` attributes and ACLs, hard links within the tree), renamed into place, then
the source removed — with rename's rules for the target. The names of files with several names it moves stay
names of them, and their inode numbers on the copy are said at the call's end (``moved``).

Standard library only (the in-box supervisor imports this).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat

from mcp_server_guard import linux
from mcp_server_guard.paths import MOVING_COPY

OPENAT2 = 437  # openat2(2): the same number on every architecture
RESOLVE_NO_MAGICLINKS = 0x02

__all__ = ["move_tree", "moved", "split"]

_PATH_MAX = 4096
_MOVED_MAX = 100_000
_ACLS = linux.ACL_NAMES
# This call's moved names of files with several names (see ``_copy_tree``): their inode numbers on the copy (the
# upper layer's), said with the call's end so that the server tells them from copies with the same bytes.
_moved: list[int] = []


def lstat_from(top: int, path: bytes) -> os.stat_result:
    """``path`` (absolute, as ``readlink`` gives it) looked at from ``top``, one name at a time, no link followed."""
    *parents, last = [part for part in path.split(b"/") if part]
    fd = os.open(".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=top)
    try:
        for part in parents:
            nxt = os.open(part, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = nxt
        return os.stat(last, dir_fd=fd, follow_symlinks=False)
    finally:
        os.close(fd)


def parts(path: bytes) -> tuple[bytes, bytes]:
    """Where the directory that holds ``path`` is (from the same place) and its last name; ``path`` may end with
    slashes."""
    trimmed = path.rstrip(b"/") or b"/"
    parent, _, name = trimmed.rpartition(b"/")
    if name in (b"", b".", b".."):
        raise OSError(errno.EINVAL, "not a name")
    return parent or (b"/" if trimmed.startswith(b"/") else b"."), name


def open_parent(dirfd: int, path: bytes) -> tuple[int, bytes]:
    """The directory that holds ``path``, opened (``O_PATH``: one the caller may search but not read counts), and its
    last name; ``path`` may end with slashes. Never through a magic link of ``/proc`` (``ELOOP``): the rename helper
    is a thread of the call's init, PID 1 of the box, and ``/proc/1/root``, ``/proc/1/fd/N`` would be its own view
    and descriptors, which the caller may not look into (red team 53 F3) — such a path is the kernel's to answer."""
    where, name = parts(path)
    flags = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC
    return linux.openat2(OPENAT2, dirfd, os.fsdecode(where), flags, RESOLVE_NO_MAGICLINKS), name


def split(dirfd: int, path: bytes) -> tuple[int, bytes]:
    """The directory that holds ``path`` (opened) and its last name; ``path`` may end with slashes."""
    where, name = parts(path)
    return os.open(where, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=dirfd), name


def move_tree(old_dir: int, old: bytes, new_dir: int, new: bytes, *, noreplace: bool = False) -> int:
    """Move the directory ``old`` to ``new`` by copying and removing (as ``mv`` across file systems); rename's
    rules for the target hold (an empty directory is replaced; else EEXIST, ENOTDIR, ENOTEMPTY; not into
    itself: EINVAL). Returns 0 or an errno."""
    src_parent = dst_parent = -1
    try:
        src_parent, src_name = split(old_dir, old)
        dst_parent, dst_name = split(new_dir, new)
        src = os.stat(src_name, dir_fd=src_parent, follow_symlinks=False)
        try:
            dst: os.stat_result | None = os.stat(dst_name, dir_fd=dst_parent, follow_symlinks=False)
        except FileNotFoundError:
            dst = None
        if dst is not None:
            if (dst.st_dev, dst.st_ino) == (src.st_dev, src.st_ino):
                return 0
            if noreplace:
                return errno.EEXIST
            if not stat.S_ISDIR(dst.st_mode):
                return errno.ENOTDIR
            with os.scandir(_reopen(dst_parent, dst_name)) as entries:
                if any(True for _ in entries):
                    return errno.ENOTEMPTY
        if _inside(dst_parent, src):
            return errno.EINVAL
        temp = b"." + dst_name[:64] + MOVING_COPY.encode() + os.urandom(6).hex().encode()  # never landed
        relaxed: list[tuple[int, bytes, int, bytes]] = []
        try:
            try:
                _copy_tree(src_parent, src_name, dst_parent, temp)
            except PermissionError:
                # A rename needs no right on what it moves; a copy must read it all, and removing the original must
                # write each directory: the owner's rights are given for that (the original goes; on failure they
                # are put back).
                with contextlib.suppress(OSError):
                    shutil.rmtree(os.fsdecode(temp), dir_fd=dst_parent)
                _relax(src_parent, src_name, relaxed)
                _copy_tree(src_parent, src_name, dst_parent, temp)
                _as_before(dst_parent, temp, relaxed)
            if dst is not None:
                os.rmdir(dst_name, dir_fd=dst_parent)
            os.rename(temp, dst_name, src_dir_fd=dst_parent, dst_dir_fd=dst_parent)
        except OSError:
            with contextlib.suppress(OSError):
                shutil.rmtree(os.fsdecode(temp), dir_fd=dst_parent)
            _put_back(relaxed)
            raise
        try:
            _remove_tree(src_parent, src_name, relaxed)
        except OSError:
            # The original cannot go: the move did not happen (the copy goes again, the original stays as it was).
            with contextlib.suppress(OSError):
                os.rename(dst_name, temp, src_dir_fd=dst_parent, dst_dir_fd=dst_parent)
                shutil.rmtree(os.fsdecode(temp), dir_fd=dst_parent)
            _put_back(relaxed)
            raise
        for fd, _name, _mode, _rel in relaxed:
            os.close(fd)
        return 0
    except OSError as exc:
        return exc.errno or errno.EIO
    finally:
        for fd in (src_parent, dst_parent):
            if fd >= 0:
                os.close(fd)


def _remove_tree(parent: int, name: bytes, relaxed: list[tuple[int, bytes, int, bytes]]) -> None:
    """Remove the original tree; where a directory's mode withholds the owner's write, give it and try again."""
    try:
        shutil.rmtree(os.fsdecode(name), dir_fd=parent)
    except PermissionError:
        _relax(parent, name, relaxed)
        shutil.rmtree(os.fsdecode(name), dir_fd=parent)


def _relax(parent: int, name: bytes, relaxed: list[tuple[int, bytes, int, bytes]]) -> None:
    """Give the owner read, write and search on each directory of the tree ``name`` and read on each file where a
    mode withholds them; ``relaxed`` gets (a descriptor of its directory, name, the mode before) for each. Depth
    first: as many descriptors open as the tree is deep."""

    def give(at: int, entry: bytes, rel: bytes) -> os.stat_result:
        st = os.stat(entry, dir_fd=at, follow_symlinks=False)
        mode = stat.S_IMODE(st.st_mode)
        wanted = 0o700 if stat.S_ISDIR(st.st_mode) else 0o400 if stat.S_ISREG(st.st_mode) else 0
        if mode & wanted != wanted:
            os.chmod(entry, mode | wanted, dir_fd=at)
            relaxed.append((os.dup(at), entry, mode, rel))
        return st

    if not stat.S_ISDIR(give(parent, name, b"").st_mode):
        return
    stack: list[tuple[int, bytes, list[bytes]]] = []

    def enter(at: int, entry: bytes, rel: bytes) -> None:
        fd = _reopen(at, entry)
        with os.scandir(fd) as entries:
            stack.append((fd, rel, [os.fsencode(e.name) for e in entries]))

    enter(parent, name, b"")
    try:
        while stack:
            fd, rel, names = stack[-1]
            if not names:
                os.close(fd)
                stack.pop()
                continue
            child = names.pop()
            child_rel = rel + b"/" + child if rel else child
            if stat.S_ISDIR(give(fd, child, child_rel).st_mode):
                enter(fd, child, child_rel)
    finally:
        for fd, _rel, _names in stack:
            os.close(fd)


def _as_before(dst_parent: int, top: bytes, relaxed: list[tuple[int, bytes, int, bytes]]) -> None:
    """The copy ``top`` given the modes its original had before ``_relax`` (deepest first)."""
    for _at, _entry, mode, rel in sorted(relaxed, key=lambda r: -r[3].count(b"/") - bool(r[3])):
        os.chmod(top + b"/" + rel if rel else top, mode, dir_fd=dst_parent)


def _put_back(relaxed: list[tuple[int, bytes, int, bytes]]) -> None:
    for at, entry, mode, _rel in reversed(relaxed):
        with contextlib.suppress(OSError):
            os.chmod(entry, mode, dir_fd=at)
        os.close(at)
    relaxed.clear()


def _reopen(parent: int, name: bytes) -> int:
    """The directory ``name`` (a path from ``parent``) opened one component at a time, no link followed on the way:
    a path of any length (red team 82 F5: a tree deeper than PATH_MAX failed to move with ENAMETOOLONG), and no
    directory of it swapped for a link mid-copy leads elsewhere."""
    parts = [part for part in name.split(b"/") if part and part != b"."] or [b"."]
    fd = os.open(parts[0], _DIR_FLAGS, dir_fd=parent)
    for part in parts[1:]:
        try:
            nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
        finally:
            os.close(fd)
        fd = nxt
    return fd


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _reopen_both(src_parent: int, src: bytes, dst_parent: int, dst: bytes) -> tuple[int, int]:
    """``_reopen`` of a source directory and of its copy: both open, or neither."""
    src_fd = _reopen(src_parent, src)
    try:
        return src_fd, _reopen(dst_parent, dst)
    except OSError:
        os.close(src_fd)
        raise


def _inside(directory: int, tree: os.stat_result) -> bool:
    """Whether ``directory`` is ``tree`` or lies below it (walking up through '..')."""
    current = os.dup(directory)
    try:
        for _ in range(_PATH_MAX):
            st = os.fstat(current)
            if (st.st_dev, st.st_ino) == (tree.st_dev, tree.st_ino):
                return True
            parent = os.open("..", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=current)
            up = os.fstat(parent)
            os.close(current)
            current = parent
            if (up.st_dev, up.st_ino) == (st.st_dev, st.st_ino):
                return False  # the root
        return False
    finally:
        os.close(current)


def moved() -> list[int]:
    """The inode numbers of the names of files with several names that this call's tree moves made (a file with
    several names moved with a tree stays one of them; a ``cp -a`` of it has the same bytes, mode and times, and
    the upper layer alone cannot tell which is which). Forgotten once said."""
    said = list(dict.fromkeys(_moved))
    _moved.clear()
    return said


def _copy_tree(src_parent: int, src_name: bytes, dst_parent: int, dst_name: bytes) -> None:
    """Copy the directory ``src_name`` to the new ``dst_name``: modes, times, symlinks, FIFOs and sockets, and hard
    links within the tree; never following a symlink. Two descriptors of the tree's top and two of the directory
    being copied are open at a time, however many directories it holds (threat: a move of a tree of 600
    directories failed with EMFILE under the usual limit of 1,024 open files, red team 40q F)."""
    top = os.stat(src_name, dir_fd=src_parent, follow_symlinks=False)
    os.mkdir(dst_name, 0o700, dir_fd=dst_parent)
    linked: dict[tuple[int, int], bytes] = {}  # (dev, ino) -> where its first copy went, from the new top
    src_top, dst_top = _reopen_both(src_parent, src_name, dst_parent, dst_name)
    try:
        stack: list[tuple[bytes, os.stat_result]] = [(b".", top)]
        finish: list[tuple[bytes, os.stat_result]] = []
        while stack:
            rel, st = stack.pop()
            finish.append((rel, st))
            src_fd, dst_fd = _reopen_both(src_top, rel, dst_top, rel)
            try:
                _copy_entries(src_fd, dst_fd, rel, dst_top, linked, stack)
                _copy_xattrs(src_fd, dst_fd, b".")
            finally:
                os.close(src_fd)
                os.close(dst_fd)
        for rel, st in reversed(finish):  # deepest first: filling a directory changes its times
            fd = _reopen(dst_top, rel)
            try:
                os.chmod(fd, stat.S_IMODE(st.st_mode))
                os.utime(fd, ns=(st.st_atime_ns, st.st_mtime_ns))
            finally:
                os.close(fd)
    finally:
        os.close(src_top)
        os.close(dst_top)


def _copy_entries(
    src_fd: int,
    dst_fd: int,
    rel: bytes,
    dst_top: int,
    linked: dict[tuple[int, int], bytes],
    stack: list[tuple[bytes, os.stat_result]],
) -> None:
    """The entries of one directory of ``_copy_tree`` (``rel`` from the top): its directories made and left on
    ``stack``, everything else copied."""
    with os.scandir(src_fd) as entries:
        names = [os.fsencode(e.name) for e in entries]
    for name in names:
        item = os.stat(name, dir_fd=src_fd, follow_symlinks=False)
        key = (item.st_dev, item.st_ino)
        path = name if rel == b"." else rel + b"/" + name
        if stat.S_ISDIR(item.st_mode):
            os.mkdir(name, 0o700, dir_fd=dst_fd)
            stack.append((path, item))
            continue
        if item.st_nlink > 1 and key in linked:
            where, _, first = linked[key].rpartition(b"/")
            first_dir = _reopen(dst_top, where or b".")  # (by component: at any depth, no link followed)
            try:
                os.link(first, name, src_dir_fd=first_dir, dst_dir_fd=dst_fd, follow_symlinks=False)
            finally:
                os.close(first_dir)
            continue
        if stat.S_ISREG(item.st_mode) and item.st_nlink > 1:
            # A file with other names (outside the tree, too): the moved name stays one of them, as a rename
            # would keep it. Its other names in the tree are made names of this one: on the copy the
            # names of a file with several are not one file until one of them is linked (each would copy
            # up on its own).
            os.link(name, name, src_dir_fd=src_fd, dst_dir_fd=dst_fd, follow_symlinks=False)
            linked[key] = path
            if len(_moved) < _MOVED_MAX:
                _moved.append(os.stat(name, dir_fd=dst_fd, follow_symlinks=False).st_ino)
            continue
        if stat.S_ISREG(item.st_mode):
            _copy_file(src_fd, name, dst_fd, item)
        elif stat.S_ISLNK(item.st_mode):
            os.symlink(os.readlink(name, dir_fd=src_fd), name, dir_fd=dst_fd)
        elif stat.S_ISFIFO(item.st_mode):
            os.mkfifo(name, stat.S_IMODE(item.st_mode), dir_fd=dst_fd)
        elif stat.S_ISSOCK(item.st_mode):
            os.mknod(name, item.st_mode, dir_fd=dst_fd)
        else:
            raise OSError(errno.EPERM, "a device cannot be copied")
        if not stat.S_ISLNK(item.st_mode):
            _copy_xattrs(src_fd, dst_fd, name)
        if not stat.S_ISREG(item.st_mode):
            os.utime(name, ns=(item.st_atime_ns, item.st_mtime_ns), dir_fd=dst_fd, follow_symlinks=False)
        if item.st_nlink > 1:
            linked[key] = path


def _copy_xattrs(src_dir: int, dst_dir: int, name: bytes) -> None:
    """A moved entry's ``user.*`` extended attributes and access control lists, as the command sees them (a rename
    keeps them). An ACL naming a user or group the box does not map cannot be set here (EINVAL): it is lost."""
    src, dst = f"/proc/self/fd/{src_dir}/{os.fsdecode(name)}", f"/proc/self/fd/{dst_dir}/{os.fsdecode(name)}"
    with contextlib.suppress(OSError):
        # What the copy took from the directory it was made in (its default ACL) is none of the moved entry's: a
        # rename keeps none (red team 3 F5).
        had = set(os.listxattr(src, follow_symlinks=False))
        for acl in set(_ACLS) & set(os.listxattr(dst, follow_symlinks=False)) - had:
            with contextlib.suppress(OSError):
                os.removexattr(dst, acl, follow_symlinks=False)
        for attribute in had:
            if attribute.startswith("user.") or attribute in _ACLS:
                with contextlib.suppress(OSError):
                    os.setxattr(dst, attribute, os.getxattr(src, attribute, follow_symlinks=False),
                                follow_symlinks=False)  # fmt: skip


def _copy_file(src_dir: int, name: bytes, dst_dir: int, st: os.stat_result) -> None:
    src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=src_dir)
    try:
        dst = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dst_dir)
        try:
            linux.copy_data(src, dst, st.st_size)  # a sparse disk image moved with its directory stays sparse
            os.fchmod(dst, stat.S_IMODE(st.st_mode))
            os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns))
        finally:
            os.close(dst)
    finally:
        os.close(src)
