"""What a pre-image is on disk: a file's kind, the room it takes, and how it is kept (moved, linked, or copied —
``files.copying`` — where it lies on another file system or has other names). Used by the history store
(``files.history``) and by what reads a command's changes.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from mcp_server_guard import faults, linux
from mcp_server_guard.files.copying import (
    Look,
    WrittenMeanwhile,
    as_copied,
    as_owner,
    copy_into,
    remove_path,
    same_file,
)
from mcp_server_guard.files.trees import remove_below
from mcp_server_guard.paths import private_dirs

__all__ = [
    "aside_name",
    "disk_usage",
    "file_kind",
    "finish_aside",
    "fsync_dir",
    "keep_data",
    "kept_kind",
    "note_bounds",
    "noted_bounds",
    "remove_entry",
    "unshare",
    "write_all",
    "write_whole",
]

_AT_FDCWD = -100
_RENAME_NOREPLACE = 1
_DIR_NO_FOLLOW = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


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


def remove_entry(dirfd: int, name: str, st: os.stat_result) -> None:
    """Remove what was copied into the history: from a directory of this user's they may not write too, given u+w
    for it (red team 64 F1: with the history on another file system, a file deleted from a 0555 directory stayed
    under its aside name, and the step said "not deleted")."""
    if stat.S_ISDIR(st.st_mode):
        as_owner(lambda: remove_below(dirfd, name), dirfd)
    else:
        as_owner(lambda: os.unlink(name, dir_fd=dirfd), dirfd)


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
                as_owner(lambda: os.rename(name, target, src_dir_fd=dirfd), dirfd, (dirfd, name),
                         after=(_AT_FDCWD, str(target)))  # fmt: skip
            elif kind != "tree":
                try:
                    os.link(name, target, src_dir_fd=dirfd, follow_symlinks=False)
                except PermissionError as exc:
                    # A file of someone else's (a build run with sudo left it): the kernel links only one's own
                    # (fs.protected_hardlinks), so its pre-image is a copy; the rename over it is the directory's to
                    # allow, as natively (red team 68 F6: the command's version was lost as a "conflict").
                    raise OSError(errno.EXDEV, "not ours to link: copied") from exc
            else:
                raise OSError(errno.EINVAL, "a directory is kept by moving it")
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            if move and (kind == "tree" or st.st_nlink < 2):
                _keep_aside(dirfd, name, target, entry_id)
                return
            looks: dict[str, Look] = {}
            copy_into(dirfd, name, target, st, temp=f".{entry_id}.tmp", looks=looks)
            faults.point(f"history copied {entry_id}")
            _copied_whole(dirfd, name, st, target, looks[""][3])
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
    as_owner(lambda: linux.renameat2(dirfd, name, dirfd, aside, _RENAME_NOREPLACE), dirfd)  # (never over a name)
    faults.point(f"history aside {entry_id}")
    looks: dict[str, Look] = {}
    try:
        finish_aside(dirfd, target, entry_id, looked=True, looks=looks)
    except BaseException as exc:
        if os.path.lexists(target):
            if not (looks and as_copied(dirfd, aside, looks)):
                raise  # (removed, or a tree removed in part: the history holds it whole)
            # Copied, not removed (red team 64 F1: it stayed hidden under the aside name): the copy goes.
            remove_path(target)
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


def finish_aside(
    dirfd: int, target: Path, entry_id: str, *, looked: bool = False, looks: dict[str, Look] | None = None
) -> bool:
    """What :func:`_keep_aside` set aside in ``dirfd`` (if anything): copied to ``target`` unless it is there (whole
    or not at all), then removed. Whether there was anything. ``looked``: raise WrittenMeanwhile (the copy
    removed) where it changed while it was copied. ``looks`` (filled in): what the copy saw."""
    aside = aside_name(entry_id)
    try:
        st = os.stat(aside, dir_fd=dirfd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    looks = {} if looks is None else looks
    if not os.path.lexists(target):
        copy_into(dirfd, aside, target, st, temp=f".{entry_id}.tmp", looks=looks)
    faults.point(f"history copied {entry_id}")
    if looked and not as_copied(dirfd, aside, looks):
        # Threat: a write through a descriptor a program held in it (its cwd in a deleted tree, a log open for
        # append) while it was copied: removed with the aside and in no copy (red team 59 N1, 60 F1). Natively the
        # history keeps that very inode, written. Here the step is a conflict and the tree goes back, written.
        remove_path(target)
        raise WrittenMeanwhile("it was written while it was kept")
    remove_entry(dirfd, aside, st)
    return True


def _copied_whole(dirfd: int, name: str, st: os.stat_result, target: Path, ctime_ns: int) -> None:
    """Raise WrittenMeanwhile (the copy at ``target`` removed) unless the file at ``name`` is still as ``st`` shows
    it (:func:`same_file`). Threat: a write made while the copy ran (seconds for a large file) by a program that
    takes no lock (a terminal's ``>>``, a logger): the step looked before the copy, would replace the file after,
    and the write would be gone with no conflict said. ``ctime_ns``: the ctime the copy left (a file its owner may not
    read was given u+r to be read, and its mode put back), taken for the one looked at."""
    try:
        now: os.stat_result | None = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except FileNotFoundError:
        now = None
    if now is None or not same_file(now, st, ctime_ns):
        with contextlib.suppress(FileNotFoundError):
            remove_path(target)
        raise WrittenMeanwhile("it was written while its previous version was kept")


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
