"""A copy of a file or a tree that is the file as it was: bytes with their holes, mode, owner and group as far as
this process may, times, ``user.*`` attributes and ACLs, names of one file within a tree one file again — made
beneath descriptors, without following a link or opening anything but a regular file or a directory. Used to keep
pre-images in a history on another file system than the project (``files.kept``) and to put them back.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import shutil
import socket
import stat
import struct
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mcp_server_guard import linux
from mcp_server_guard.files import widened
from mcp_server_guard.files.trees import as_found, open_own_dir

__all__ = [
    "Look",
    "WrittenMeanwhile",
    "as_copied",
    "as_owner",
    "carry_attributes",
    "copy_into",
    "copy_xattrs",
    "given_owner",
    "open_as_owner",
    "open_to_read",
    "owner_writes",
    "remove_path",
    "same_file",
]

_AT_FDCWD = -100
_RENAME_NOREPLACE = 1
_MAX_DEPTH = 300  # levels a kept tree is copied to (a changed path has at most changeset.MAX_DEPTH)
_LINKS_OPEN = 256  # copies of files with several names kept open to link the next names to (beyond: copies)
_FLAGS = os.O_NOFOLLOW | os.O_CLOEXEC

Look = tuple[int, int, int, int]  # an entry as a copy saw it: inode, size, mtime and ctime (ns)


class WrittenMeanwhile(Exception):
    """A file changed while its pre-image was copied into the history: the copy is not the file the step would
    replace or remove (the step goes no further; the copy is gone)."""


def copy_into(
    dirfd: int,
    name: str,
    target: Path,
    st: os.stat_result,
    *,
    replace: bool = True,
    temp: str = "",
    over: os.stat_result | None = None,
    looks: dict[str, Look] | None = None,
) -> str:
    """Copy what is at ``name`` (never followed, never opened unless a regular file or a directory) to ``target``,
    whole or not at all: made under a temp name beside it (``temp``, or a fresh one) and renamed there (over what
    is there only when ``replace``, and then, given ``over``, only while the file there is still as ``over`` shows
    it: else WrittenMeanwhile); returns the SHA-256 of a file's bytes ("" for anything else). ``looks`` (filled in):
    each entry copied as the copy saw it, by its path below what is copied ("" for that itself), to tell a write
    made since (:func:`as_copied`)."""
    made = target.with_name(temp or f".{target.name}.{os.urandom(4).hex()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        remove_path(made)  # left by a copy killed before (its name is the step's own)
    try:
        digest = _copy(dirfd, name, made, st, {} if looks is None else looks)
        if over is not None:
            # Threat: a write made while the copy ran (seconds for a large file) by a program that takes no lock,
            # replaced with the file it was made to (red team 56 F3: an undo's pre-image copied back).
            with contextlib.suppress(FileNotFoundError):
                now = os.lstat(target)
                if not same_file(now, over):
                    raise WrittenMeanwhile("it was written while its previous version was put back")
        if replace:
            os.rename(made, target)
        else:
            linux.renameat2(_AT_FDCWD, str(made), _AT_FDCWD, str(target), _RENAME_NOREPLACE)
    except BaseException:
        with contextlib.suppress(OSError):
            remove_path(made)
        raise
    return digest


def open_to_read(dirfd: int, name: str, st: os.stat_result | None = None, moved: list[int] | None = None) -> int:
    """:func:`open_as_owner` to read."""
    return open_as_owner(dirfd, name, st, moved)


def open_as_owner(
    dirfd: int, name: str, st: os.stat_result | None = None, moved: list[int] | None = None, *, write: bool = False
) -> int:
    """The regular file or directory ``st`` (default: what ``name`` is now) at ``name`` in ``dirfd`` (or AT_FDCWD)
    opened to be read (``write``: a file, to be read and written), never followed. One its owner (this user) may
    not read (mode 000, 0200; a directory 0300) or write is given u+r (a directory u+rx; ``write``: u+rw) for the
    time of the open, by a descriptor of that very inode, and its mode put back: copying it, changing its mode
    back, is this user's right (red team 60 F2: its deletion kept by copy was a false conflict; 62 F5: the undo
    of ``chmod 000 d`` was refused). Its ctime then moved by our own hand: appended to ``moved``."""
    held = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dirfd)
    try:
        now = os.fstat(held)
        st = st or now
        # Only the very inode looked at, and only a file or a directory: never a FIFO or a device opened (a name
        # swapped since for one would block us, or rewind a tape), nothing followed.
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino) or not (
            stat.S_ISREG(now.st_mode) or stat.S_ISDIR(now.st_mode)
        ):
            raise OSError(errno.ESTALE, "it changed while kept")
        at = f"/proc/self/fd/{held}"  # (the inode held: an O_PATH descriptor is opened again through its magic link)
        if write and not stat.S_ISREG(now.st_mode):
            raise OSError(errno.EISDIR, "not a file")
        flags = (os.O_RDWR if write else os.O_RDONLY) | os.O_NONBLOCK | os.O_CLOEXEC
        flags |= os.O_DIRECTORY if stat.S_ISDIR(now.st_mode) else 0
        try:
            return os.open(at, flags)
        except PermissionError:
            if now.st_uid != os.geteuid():
                raise
        needed = stat.S_IRUSR | (stat.S_IXUSR if stat.S_ISDIR(now.st_mode) else 0) | (stat.S_IWUSR if write else 0)
        note = widened.widen(held, stat.S_IMODE(now.st_mode), stat.S_IMODE(now.st_mode) | needed)
        try:
            return os.open(at, flags)
        finally:
            widened.narrow(held, stat.S_IMODE(now.st_mode), note)
            if moved is not None:
                moved.append(os.fstat(held).st_ctime_ns)
    finally:
        os.close(held)


def _look(st: os.stat_result, moved: list[int] | None = None) -> Look:
    """An entry as a copy saw it (its ctime as our own open left it: ``moved``)."""
    return st.st_ino, st.st_size, st.st_mtime_ns, moved[-1] if moved else st.st_ctime_ns


def as_copied(dirfd: int, name: str, looks: Mapping[str, Look], key: str = "", depth: int = 0) -> bool:
    """Whether what is at ``name`` is still, entry by entry, what a copy saw (``copy_into``'s ``looks``): nothing
    written, made, removed or renamed in it since (no link followed; a directory that cannot be read is not)."""
    try:
        st = as_found(os.stat(name, dir_fd=dirfd, follow_symlinks=False))  # (a directory let in: as it was before)
    except OSError:
        return False
    if looks.get(key) != _look(st):
        return False
    if not stat.S_ISDIR(st.st_mode):
        return True
    try:
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | _FLAGS, dir_fd=dirfd)
    except OSError:
        return False
    try:
        return (
            depth < _MAX_DEPTH
            and os.fstat(fd).st_ino == st.st_ino
            and all(
                as_copied(fd, entry, looks, f"{key}/{entry}" if key else entry, depth + 1) for entry in os.listdir(fd)
            )
        )
    finally:
        os.close(fd)


def _copy(dirfd: int, name: str, target: Path, st: os.stat_result, looks: dict[str, Look]) -> str:
    if stat.S_ISREG(st.st_mode):
        moved: list[int] = []
        src = open_to_read(dirfd, name, st, moved)
        looks[""] = _look(st, moved)
        try:
            hasher = hashlib.sha256()
            out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                _copy_file(src, out, st, hasher)
                os.fsync(out)
            finally:
                os.close(out)
        finally:
            os.close(src)
        return hasher.hexdigest()
    if stat.S_ISDIR(st.st_mode):
        tree = _Tree(os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), looks)
        try:
            _copy_entry(dirfd, name, tree.top, target.name, st, 0, tree)
        finally:
            os.close(tree.top)
            for fd in tree.open.values():
                os.close(fd)
        return ""
    # (Made beneath its directory, held open: a socket's node is bound by a short name there, red team 59 F2.)
    parent = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        _copy_entry(dirfd, name, parent, target.name, st, 0, _Tree(parent, looks))
    finally:
        os.close(parent)
    return ""


def _owned_like(out: int | tuple[int, str], st: os.stat_result) -> None:
    """A copy given the owner and group of what it copies, as far as this process may (a user: a group of theirs;
    root: any). A change of owner clears set-id bits: the caller gives them again. Red team 60 F3: a pre-image
    copied back from a history on another file system came back with the server's group."""
    for uid, gid in ((st.st_uid, st.st_gid), (-1, st.st_gid)):
        try:
            if isinstance(out, int):
                os.fchown(out, uid, gid)
            else:
                os.chown(out[1], uid, gid, dir_fd=out[0], follow_symlinks=False)
            return
        except PermissionError:
            continue


def _copy_file(src: int, out: int, st: os.stat_result, hasher: hashlib._Hash | None = None) -> None:
    linux.copy_data(src, out, os.fstat(src).st_size, hasher)  # holes kept (red team 7 F2)
    copy_xattrs(src, out)
    # Mode and times while the copy is still ours, its owner last: a copy given away (a file of someone else's,
    # kept by a server that may chown but is no longer its owner then) could not be given them after.
    os.fchmod(out, stat.S_IMODE(st.st_mode))
    os.utime(out, ns=(st.st_atime_ns, st.st_mtime_ns))
    given_owner(out, st)


def given_owner(out: int, st: os.stat_result) -> None:
    """A copy (its mode given already) given the owner and group of what it copies, its set-id bits kept."""
    _owned_like(out, st)
    if st.st_mode & (stat.S_ISUID | stat.S_ISGID) and os.fstat(out).st_mode != st.st_mode:
        # A change of owner cleared them. Where they cannot be given again (the copy is someone else's now, and
        # this process may chown but not chmod others' files), the copy stays ours with them: a pre-image without
        # its set-id bits would come back wrong from an undo that says success (red team 72 F1).
        try:
            os.fchmod(out, stat.S_IMODE(st.st_mode))
        except PermissionError:
            os.fchown(out, os.geteuid(), os.getegid())
            os.fchmod(out, stat.S_IMODE(st.st_mode))


def carry_attributes(old: int, dirfd: int, tmp: str) -> None:
    """The rewritten file keeps the access control list and the ``user.*`` attributes it had, and its owner and group
    as far as this process may give them, as a file rewritten in place does (the new content lands as a new inode).
    Threat: with its ACL dropped (red team 4 F3), a file whose ACL's mask was wider than its group entry
    (``group::--- mask::rw-``) gave the group what the mask allowed; an ACL the directory's default gave the new inode
    is none of the file's either; with the server's group (red team 115 F2), a ``0640`` file shared with a group was
    shut to that group and open to the server's."""
    with contextlib.suppress(OSError):
        fd = os.open(tmp, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dirfd)
        try:
            had = os.listxattr(old)
            for name in set(linux.ACL_NAMES) & set(os.listxattr(fd)) - set(had):
                os.removexattr(fd, name)
            for name in had:
                if name.startswith("user.") or name in linux.ACL_NAMES:
                    os.setxattr(fd, name, os.getxattr(old, name))
            _owned_like(fd, os.fstat(old))  # (its mode has no set-id bits: a new content is never given them)
        finally:
            os.close(fd)


@dataclass
class _Tree:
    """A tree being copied: the directory it is copied into, and where the first copy of each file with several
    names is (open, or by its path below ``top`` past the first ``_LINKS_OPEN``), for its next names to be linked."""

    top: int
    looks: dict[str, Look]
    open: dict[tuple[int, int], int] = field(default_factory=dict)
    paths: dict[tuple[int, int], str] = field(default_factory=dict)

    def link(self, key: tuple[int, int], out_dir: int, out_name: str) -> bool:
        if key in self.open:
            os.link(f"/proc/self/fd/{self.open[key]}", out_name, dst_dir_fd=out_dir)
        elif key in self.paths:
            os.link(self.paths[key], out_name, src_dir_fd=self.top, dst_dir_fd=out_dir, follow_symlinks=False)
        else:
            return False
        return True

    def keep(self, key: tuple[int, int], out: int, where: str) -> bool:
        """Keep ``out`` (the first copy, at ``where`` below ``top``) to link to; False: it is for the caller to
        close."""
        if len(self.open) < _LINKS_OPEN:
            self.open[key] = out
            return True
        self.paths[key] = where
        return False


def _copy_entry(
    dirfd: int,
    name: str,
    out_dir: int,
    out_name: str,
    st: os.stat_result,
    depth: int,
    tree: _Tree,
    where: str = "",
) -> None:
    """One entry of a tree kept by copy, beneath descriptors on both sides (no link followed, no path too long: red
    team 10 F5): files with their holes, attributes and ACLs, names of one file within the tree one file again
    (``tree``; ``where``: the entry's path below its top), FIFOs and sockets made (never opened), directories entry by
    entry; each as it was seen noted in ``tree.looks``."""
    mode = stat.S_IMODE(st.st_mode)
    key = (where or out_name).partition("/")[2]
    tree.looks[key] = _look(st)
    if stat.S_ISREG(st.st_mode):
        if st.st_nlink > 1 and tree.link((st.st_dev, st.st_ino), out_dir, out_name):
            return
        moved: list[int] = []
        src = open_to_read(dirfd, name, st, moved)
        tree.looks[key] = _look(st, moved)
        try:
            if (os.fstat(src).st_dev, os.fstat(src).st_ino) != (st.st_dev, st.st_ino):
                raise OSError(errno.ESTALE, "it changed while kept")
            out = os.open(out_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _FLAGS, 0o600, dir_fd=out_dir)
            try:
                _copy_file(src, out, st)
            finally:
                if not (st.st_nlink > 1 and tree.keep((st.st_dev, st.st_ino), out, where or out_name)):
                    os.close(out)
        finally:
            os.close(src)
        return
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(name, dir_fd=dirfd), out_name, dir_fd=out_dir)
        _owned_like((out_dir, out_name), st)
    elif stat.S_ISDIR(st.st_mode):
        _copy_dir(dirfd, name, out_dir, out_name, st, depth, tree, where or out_name)
    elif stat.S_ISFIFO(st.st_mode):
        os.mkfifo(out_name, mode, dir_fd=out_dir)
        _owned_like((out_dir, out_name), st)
        os.chmod(out_name, mode, dir_fd=out_dir)  # (the umask took bits from mkfifo's: red team 11 F7)
    elif stat.S_ISSOCK(st.st_mode):
        _socket_node(out_dir, out_name, mode)
        _owned_like((out_dir, out_name), st)
        os.chmod(out_name, mode, dir_fd=out_dir)
    else:
        raise OSError(errno.EPERM, "cannot keep this kind of file")
    os.utime(out_name, ns=(st.st_atime_ns, st.st_mtime_ns), dir_fd=out_dir, follow_symlinks=False)


def _copy_dir(
    dirfd: int,
    name: str,
    out_dir: int,
    out_name: str,
    st: os.stat_result,
    depth: int,
    tree: _Tree,
    where: str,
) -> None:
    if depth > _MAX_DEPTH:
        raise OSError(errno.ELOOP, "too deep to keep")
    # (One of the user's they may not read or search, ``chmod 000``: let in for the scope of an apply or an undo.)
    fd = open_own_dir(name, dirfd, real=0o500)
    try:
        if (os.fstat(fd).st_dev, os.fstat(fd).st_ino) != (st.st_dev, st.st_ino):
            raise OSError(errno.ESTALE, "it changed while kept")
        os.mkdir(out_name, 0o700, dir_fd=out_dir)
        out = os.open(out_name, os.O_RDONLY | os.O_DIRECTORY | _FLAGS, dir_fd=out_dir)
        try:
            for entry in sorted(os.listdir(fd)):
                inner = os.stat(entry, dir_fd=fd, follow_symlinks=False)
                _copy_entry(fd, entry, out, entry, inner, depth + 1, tree, f"{where}/{entry}")
            copy_xattrs(fd, out)
            _owned_like(out, st)
            os.fchmod(out, stat.S_IMODE(as_found(st).st_mode))  # (not the owner bits an apply let it in with)
        finally:
            os.close(out)
    finally:
        os.close(fd)


def _socket_node(out_dir: int, out_name: str, mode: int) -> None:
    """A socket's node made again (bound and closed: no one listens, as after its program ended): bound by a short
    name beside it (``sun_path`` takes 107 bytes), then renamed to its own (red team 11 F7)."""
    if out_dir == _AT_FDCWD:  # (a socket kept alone, by its full path)
        short = where = f"{out_name}.s"
    else:
        short = f".s{os.urandom(4).hex()}"
        where = f"/proc/self/fd/{out_dir}/{short}"
    if len(os.fsencode(where)) >= 108:
        raise OSError(errno.ENAMETOOLONG, "cannot keep this socket: its name is too long")
    with socket.socket(socket.AF_UNIX) as node:
        node.bind(where)
    try:
        os.chmod(short, mode, dir_fd=out_dir)
        os.rename(short, out_name, src_dir_fd=out_dir, dst_dir_fd=out_dir)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(short, dir_fd=out_dir)
        raise


_ACLS = ("system.posix_acl_access", "system.posix_acl_default")


def copy_xattrs(src: int, out: int) -> None:
    """The ``user.*`` extended attributes, the ACLs and (as root) the ``trusted.*`` ones of one open file onto
    another, and its inode flags that change no one's access (``chattr +d``, ``+A`` …): a copy is the file as it was
    (red team 10 F2; red team 121 F2: an undo from a history on another file system said "exact" without them)."""
    with contextlib.suppress(OSError):
        for name in os.listxattr(src):
            if name.startswith(("user.", "trusted.")) or name in _ACLS:
                with contextlib.suppress(OSError):
                    os.setxattr(out, name, os.getxattr(src, name))
    with contextlib.suppress(OSError):
        flags = struct.unpack("i", fcntl.ioctl(src, _FS_IOC_GETFLAGS, bytes(4)))[0] & _KEPT_FLAGS
        if flags:
            had = struct.unpack("i", fcntl.ioctl(out, _FS_IOC_GETFLAGS, bytes(4)))[0]
            fcntl.ioctl(out, _FS_IOC_SETFLAGS, struct.pack("i", had | flags))


# FS_IOC_GETFLAGS / SETFLAGS, and the flags a copy keeps: sync, compress, nodump, noatime, dirsync, notail, topdir,
# nocompress (never immutable or append-only, which would stop the copy's own next steps; never nocow, which only an
# empty file takes).
_FS_IOC_GETFLAGS, _FS_IOC_SETFLAGS = 0x80086601, 0x40086602
_KEPT_FLAGS = 0x8 | 0x4 | 0x40 | 0x80 | 0x10000 | 0x8000 | 0x20000 | 0x400


def same_file(now: os.stat_result, st: os.stat_result, ctime_ns: int | None = None) -> bool:
    """Whether ``now`` is the file ``st`` was, as it was: the same inode, size, modification time and mode, and the
    same ctime (``ctime_ns`` if given) where its link count did not change (another call's link or unlink of a
    file with several names moves its ctime and link count, not what it holds)."""
    if (now.st_ino, now.st_size, now.st_mtime_ns, now.st_mode) != (st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode):
        return False
    return now.st_nlink != st.st_nlink or now.st_ctime_ns == (st.st_ctime_ns if ctime_ns is None else ctime_ns)


def remove_path(path: Path) -> None:
    """Remove a file or a whole tree at ``path`` (no link followed)."""
    if stat.S_ISDIR(os.lstat(path).st_mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


@contextlib.contextmanager
def owner_writes(
    *dirs: int | tuple[int, str], files: bool = False, after: tuple[int, str] | None = None
) -> Iterator[None]:
    """Directories (``files``: regular files too; open descriptors, or a name in one, never followed) of this user's
    that it may not write, given u+w for the time of one step, their modes put back after (each the very inode,
    through an O_PATH descriptor; a symlink, a FIFO, another user's entry left as it is). ``after``: where the
    named one goes in that step (a rename), for the note that a server killed meanwhile leaves (``widened``)."""
    held: list[tuple[int, int, int]] = []  # (O_PATH descriptor, the mode to put back, its note)
    moved = [_path_at(*after)] if after is not None else []
    try:
        for where in dirs:
            fd = os.open(where[1], os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=where[0]) if isinstance(
                where, tuple) else os.open(f"/proc/self/fd/{where}", os.O_PATH | os.O_CLOEXEC)  # fmt: skip
            st = os.fstat(fd)
            # (A directory is written in with search permission too: one of mode 000 let in by a step beside this
            # one, then given its mode back under it, red team 66 F1.)
            needed = stat.S_IWUSR | (stat.S_IXUSR if stat.S_ISDIR(st.st_mode) else 0)
            if (
                not (stat.S_ISDIR(st.st_mode) or (files and stat.S_ISREG(st.st_mode)))
                or st.st_uid != os.geteuid()
                or (st.st_mode & needed) == needed
                or any(os.fstat(other).st_ino == st.st_ino for other, _mode, _note in held)
            ):
                os.close(fd)
                continue
            try:
                note = widened.widen(fd, stat.S_IMODE(st.st_mode), stat.S_IMODE(st.st_mode) | needed,
                                     moved if isinstance(where, tuple) else ())  # fmt: skip
            except BaseException:
                os.close(fd)
                raise
            held.append((fd, stat.S_IMODE(st.st_mode), note))
        yield
    finally:
        for fd, mode, note in held:
            with contextlib.suppress(OSError):
                widened.narrow(fd, mode, note)
            os.close(fd)


def _path_at(dirfd: int, name: str) -> str:
    """The absolute path of ``name`` in ``dirfd`` (AT_FDCWD: ``name`` itself), "" when not known."""
    if dirfd == _AT_FDCWD:
        return name if name.startswith("/") else ""
    with contextlib.suppress(OSError):
        return os.path.join(os.readlink(f"/proc/self/fd/{dirfd}"), name)
    return ""


def as_owner(step: Callable[[], object], *dirs: int | tuple[int, str], after: tuple[int, str] | None = None) -> None:
    """A rename that a directory of this user's it may not write is in the way of (:func:`owner_writes`): tried as
    it is, and again with u+w given for the time of it (red team 62 F4: a command's writes into a 0555 directory
    dropped; 63 F6: a read-only tree the call made could not be undone)."""
    try:
        step()
    except PermissionError:
        with owner_writes(*dirs, after=after):
            step()
