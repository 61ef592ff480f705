"""What a pre-image is on disk: a file's kind, the room it takes, and a copy of it that is the file as it was
(bytes, mode, times, ``user.*`` attributes), made without following a link or opening anything but a regular
file or a directory. Used by the history store (``files.history``) and by what reads a command's changes.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import socket
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from mcp_server_guard import faults, linux
from mcp_server_guard.files.trees import remove_below
from mcp_server_guard.paths import private_dirs

__all__ = [
    "WrittenMeanwhile",
    "aside_name",
    "copy_into",
    "copy_xattrs",
    "disk_usage",
    "file_kind",
    "finish_aside",
    "fsync_dir",
    "keep_data",
    "kept_kind",
    "note_bounds",
    "noted_bounds",
    "remove_entry",
    "remove_path",
    "same_file",
    "unshare",
    "write_all",
    "write_whole",
]

_AT_FDCWD = -100
_RENAME_NOREPLACE = 1
_MAX_DEPTH = 300  # levels a kept tree is copied to (a changed path has at most changeset.MAX_DEPTH)
_LINKS_OPEN = 256  # copies of files with several names kept open to link the next names to (beyond: copies)
_DIR_NO_FOLLOW = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class WrittenMeanwhile(Exception):
    """A file changed while its pre-image was copied into the history: the copy is not the file the step would
    replace or remove (the step goes no further; the copy is gone)."""


def disk_usage(st: os.stat_result) -> int:
    """Bytes a file costs: its allocated blocks (a sparse file's data, its copies keep the holes), or its size
    where it has none (a file system that reports no blocks)."""
    return st.st_blocks * 512 if st.st_blocks else st.st_size


def file_kind(mode: int) -> str:
    """What a file is: file, dir, symlink, fifo, socket or device."""
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "device"


def kept_kind(mode: int) -> str:
    """What the history calls a kept entry: a tree, a symlink, a fifo, a socket or a file."""
    kind = file_kind(mode)
    return {"dir": "tree", "device": "file"}.get(kind, kind)


def copy_into(
    dirfd: int,
    name: str,
    target: Path,
    st: os.stat_result,
    *,
    replace: bool = True,
    temp: str = "",
    over: os.stat_result | None = None,
) -> str:
    """Copy what is at ``name`` (never followed, never opened unless a regular file or a directory) to ``target``,
    whole or not at all: made under a temp name beside it (``temp``, or a fresh one) and renamed there (over what
    is there only when ``replace``, and then, given ``over``, only while the file there is still as ``over`` shows
    it: else WrittenMeanwhile); returns the SHA-256 of a file's bytes ("" for anything else)."""
    made = target.with_name(temp or f".{target.name}.{os.urandom(4).hex()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        remove_path(made)  # left by a copy killed before (its name is the step's own)
    try:
        digest = _copy(dirfd, name, made, st)
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


def remove_path(path: Path) -> None:
    """Remove a file or a whole tree at ``path`` (no link followed)."""
    if stat.S_ISDIR(os.lstat(path).st_mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def fsync_dir(path: Path) -> None:
    """Make a directory's entries durable (a name just renamed into it survives a power cut)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` (a short write is continued, an error raised)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _copy(dirfd: int, name: str, target: Path, st: os.stat_result) -> str:
    if stat.S_ISREG(st.st_mode):
        src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dirfd)
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
        tree = _Tree(os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
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
        _copy_entry(dirfd, name, parent, target.name, st, 0, _Tree(parent))
    finally:
        os.close(parent)
    return ""


def _owned_like(out: int | tuple[int, str], st: os.stat_result) -> None:
    """A copy given the owner and group of what it copies, as far as this process may (a user: a group of theirs;
    root: any). Before its mode (a change of owner clears set-id bits). Red team 60 F3: a pre-image copied back
    from a history on another file system came back with the server's group."""
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
    _owned_like(out, st)
    os.fchmod(out, stat.S_IMODE(st.st_mode))
    os.utime(out, ns=(st.st_atime_ns, st.st_mtime_ns))


_FLAGS = os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass
class _Tree:
    """A tree being copied: the directory it is copied into, and where the first copy of each file with several
    names is (open, or by its path below ``top`` past the first ``_LINKS_OPEN``), for its next names to be linked."""

    top: int
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
    entry."""
    mode = stat.S_IMODE(st.st_mode)
    if stat.S_ISREG(st.st_mode):
        if st.st_nlink > 1 and tree.link((st.st_dev, st.st_ino), out_dir, out_name):
            return
        src = os.open(name, os.O_RDONLY | os.O_NONBLOCK | _FLAGS, dir_fd=dirfd)
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
    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | _FLAGS, dir_fd=dirfd)
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
            os.fchmod(out, stat.S_IMODE(st.st_mode))
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
    """The ``user.*`` extended attributes and the ACLs of one open file onto another (a copy is the file as it
    was: red team 10 F2)."""
    with contextlib.suppress(OSError):
        for name in os.listxattr(src):
            if name.startswith("user.") or name in _ACLS:
                with contextlib.suppress(OSError):
                    os.setxattr(out, name, os.getxattr(src, name))


def remove_entry(dirfd: int, name: str, st: os.stat_result) -> None:
    if stat.S_ISDIR(st.st_mode):
        remove_below(dirfd, name)
    else:
        os.unlink(name, dir_fd=dirfd)


def keep_data(dirfd: int, name: str, st: os.stat_result, target: Path, entry_id: str, *, move: bool) -> None:
    """A pre-image's data into the store at ``target``: moved (``move``) or hard-linked; copied where it lies on
    another file system or still has other names (its bytes must not change through them). Done again after a
    crash, it finds what it did and finishes (a copy whose original was not yet removed)."""
    kind = kept_kind(st.st_mode)
    if not os.path.lexists(target):
        try:
            if kind != "tree" and st.st_nlink > 1:
                # A pre-image is the bytes the path had: an inode with other names can change through them.
                raise OSError(errno.EXDEV, "shared with other names: copied")
            if move:
                os.rename(name, target, src_dir_fd=dirfd)
            elif kind != "tree":
                os.link(name, target, src_dir_fd=dirfd, follow_symlinks=False)
            else:
                raise OSError(errno.EINVAL, "a directory is kept by moving it")
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            if move and (kind == "tree" or st.st_nlink < 2):
                _keep_aside(dirfd, name, target, entry_id)
                return
            copy_into(dirfd, name, target, st, temp=f".{entry_id}.tmp")
            faults.point(f"history copied {entry_id}")
            _copied_whole(dirfd, name, st, target)
            if move:
                remove_entry(dirfd, name, st)  # (a write made since is in the file its other names keep)
    elif move:
        # Copied before a crash, not yet removed: the original goes now (the caller found it unchanged).
        with contextlib.suppress(FileNotFoundError):
            remove_entry(dirfd, name, st)


def aside_name(entry_id: str) -> str:
    """The name a deleted file or tree takes beside itself while it is copied into a history on another file system
    (``_keep_aside``)."""
    return f".mcp-guard-{entry_id}.keep"


def _keep_aside(dirfd: int, name: str, target: Path, entry_id: str) -> None:
    """A file or tree being deleted, kept in a history on another file system: renamed aside first (one rename on
    its own file system: from then on no one reaches it by its name, as natively once it is deleted), then copied
    and removed (:func:`finish_aside`). Threat: a write made while a copy ran (seconds for a large tree), by a
    program that takes no lock, into a tree copied first and removed after: gone with the tree, in no copy (red
    team 56 F1, F2). Put back where the copy fails; a kill leaves the aside name for the step finished after a
    crash (``HistoryStore.finish_aside``)."""
    aside = aside_name(entry_id)
    linux.renameat2(dirfd, name, dirfd, aside, _RENAME_NOREPLACE)  # (never over anything of that name)
    faults.point(f"history aside {entry_id}")
    try:
        finish_aside(dirfd, target, entry_id)
    except BaseException as exc:
        if os.path.lexists(target):
            raise
        # Put back: where it was, or beside what someone made there meanwhile (red team 58 F4: it stayed hidden
        # under the aside name, with no record of it).
        try:
            linux.renameat2(dirfd, aside, dirfd, name, _RENAME_NOREPLACE)
        except FileExistsError:
            beside = os.fsdecode(os.fsencode(name)[:180]) + f".mcp-guard-{entry_id}"
            linux.renameat2(dirfd, aside, dirfd, beside, _RENAME_NOREPLACE)
            if isinstance(exc, OSError):
                raise OSError(exc.errno, f"{exc.strerror}; what was there is beside it, as {beside}") from exc
        raise


def finish_aside(dirfd: int, target: Path, entry_id: str) -> bool:
    """What :func:`_keep_aside` set aside in ``dirfd`` (if anything): copied to ``target`` unless it is there (whole
    or not at all), then removed. Whether there was anything."""
    aside = aside_name(entry_id)
    try:
        st = os.stat(aside, dir_fd=dirfd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    if not os.path.lexists(target):
        copy_into(dirfd, aside, target, st, temp=f".{entry_id}.tmp")
    faults.point(f"history copied {entry_id}")
    remove_entry(dirfd, aside, st)
    return True


def _copied_whole(dirfd: int, name: str, st: os.stat_result, target: Path) -> None:
    """Raise WrittenMeanwhile (the copy at ``target`` removed) unless the file at ``name`` is still as ``st`` shows
    it (:func:`same_file`). Threat: a write made while the copy ran (seconds for a large file) by a program that
    takes no lock (a terminal's ``>>``, a logger): the step looked before the copy, would replace the file after,
    and the write would be gone with no conflict said."""
    try:
        now: os.stat_result | None = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except FileNotFoundError:
        now = None
    if now is None or not same_file(now, st):
        with contextlib.suppress(FileNotFoundError):
            remove_path(target)
        raise WrittenMeanwhile("it was written while its previous version was kept")


def same_file(now: os.stat_result, st: os.stat_result) -> bool:
    """Whether ``now`` is the file ``st`` was, as it was: the same inode, size, modification time and mode, and the
    same ctime where its link count did not change (another call's link or unlink of a file with several names
    moves its ctime and link count, not what it holds)."""
    if (now.st_ino, now.st_size, now.st_mtime_ns, now.st_mode) != (st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode):
        return False
    return now.st_nlink != st.st_nlink or now.st_ctime_ns == st.st_ctime_ns


def write_whole(target: Path, data: bytes, *, fsync: bool = True, point: str = "") -> int:
    """Write ``data`` to ``target`` whole or not at all: a private temp name beside it (fsynced when asked), renamed
    over it — a kill never leaves it empty or half written. ``point``: the fault point just before the rename.
    Returns the disk the file takes."""
    temp = target.with_name(f".{target.stem}.{os.urandom(3).hex()}.tmp")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            write_all(fd, data)
            if fsync:
                os.fsync(fd)
            usage = disk_usage(os.fstat(fd))
        finally:
            os.close(fd)
        if point:
            faults.point(point)
        os.rename(temp, target)
        return usage
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def unshare(tree: Path, links: Iterable[tuple[str, int, int]]) -> None:
    """Each file ``links`` names in the kept ``tree`` (path in it, device, inode) that is still that inode with other
    names: replaced by a copy of itself (bytes, mode, times, attributes), whole or not at all, its directory's times
    kept. Threat: a pre-image that shares its inode with a name outside the history would change with every later
    write through that name. Idempotent (a step finished after a crash runs it again); no link followed."""
    root = os.open(tree, _DIR_NO_FOLLOW)
    try:
        for rel, dev, ino in links:
            parts = rel.split("/")
            opened: list[int] = []
            try:
                fd = root
                for part in parts[:-1]:
                    fd = os.open(part, _DIR_NO_FOLLOW, dir_fd=fd)
                    opened.append(fd)
                st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
                if not stat.S_ISREG(st.st_mode) or st.st_nlink < 2 or (st.st_dev, st.st_ino) != (dev, ino):
                    continue
                above = os.fstat(fd)
                copy_into(fd, parts[-1], Path(f"/proc/self/fd/{fd}") / parts[-1], st, replace=True,
                          temp=f".{parts[-1][:64]}.mcp-guard-unshare.tmp")  # fmt: skip
                os.utime(fd, ns=(above.st_atime_ns, above.st_mtime_ns))
            except (FileNotFoundError, NotADirectoryError):
                continue  # not there (or not that shape) any more: nothing of it to copy
            finally:
                for opened_fd in opened:
                    os.close(opened_fd)
    finally:
        os.close(root)


_BOUNDS = ".bounds"  # in a history store: the bounds the last server started on it keeps it within


def note_bounds(directory: Path, max_bytes: int, max_entries: int) -> None:
    """Say a history store's bounds in it (a server, at its start): ``mcp-guard undo`` and ``history`` then keep the
    store within the bounds of the server's policy (its ``--policy``), not their own default's."""
    data = json.dumps({"max_bytes": max_bytes, "max_entries": max_entries}).encode()
    with contextlib.suppress(OSError):
        if (directory / _BOUNDS).read_bytes() == data:
            return
    with contextlib.suppress(OSError):
        private_dirs(directory)
        write_whole(directory / _BOUNDS, data, fsync=False)


def noted_bounds(directory: Path, max_bytes: int, max_entries: int) -> tuple[int, int]:
    """The bounds a server noted in the history store at ``directory`` (:func:`note_bounds`), else those given."""
    with contextlib.suppress(OSError, ValueError, TypeError, AttributeError, KeyError):
        data = json.loads((directory / _BOUNDS).read_bytes()[:4096])
        bounds = int(data["max_bytes"]), int(data["max_entries"])
        if min(bounds) > 0:
            return bounds
    return max_bytes, max_entries
