"""Trees a command may have shaped, opened and removed without following a link: the no-follow walk every clean-up
uses (a copy's upper layer, a dead server's spool or copy area, the history's own data), and the removal of what
dead servers left (decided by their locks: ``liveness``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path

from mcp_server_guard.files import widened
from mcp_server_guard.files.liveness import dead_dirs

log = logging.getLogger("mcp_server_guard.files.trees")

_TREE_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


# The directories open_own_dir let in while an ``own_dirs_as_found`` scope of this thread runs: (O_PATH fd, what
# the directory was before, the note of it: ``widened``).
_GRANTED: ContextVar[list[tuple[int, os.stat_result, int]] | None] = ContextVar("own_dirs_granted", default=None)
_SCOPES: ContextVar[tuple[list[tuple[int, os.stat_result, int]], ...]] = ContextVar("own_dirs_scopes", default=())


def open_own_dir(name: str, dirfd: int, *, real: int = 0) -> int:
    """Open the directory ``name`` below ``dirfd`` (no link followed); one of ours (this user's) that has no
    permission is let in first — exactly the directory named: an O_PATH fd, changed through /proc. Overlayfs
    leaves its work directory with no permission at all, and a command may leave one so in its copy: within
    :func:`own_dirs_as_found` its mode comes back at the scope's end. ``real``: a directory of the real tree, let
    in only within such a scope, and given only these owner bits (u+rx to be looked into, u+rwx to be written in):
    a project directory of mode 000 is never left any wider (group and other bits stay as they are)."""
    granted = _GRANTED.get()
    try:
        fd = os.open(name, _TREE_DIR, dir_fd=dirfd)
        if granted is None:
            return fd
        st = os.fstat(fd)
        # (One it may read but not search, ``chmod 600 d``: its entries listed, none looked at — let in too: red
        # team 67 F3, a whole call "could not be read".)
        if st.st_uid != os.geteuid() or st.st_mode & stat.S_IXUSR:
            return fd
        os.close(fd)
    except PermissionError:
        if real and granted is None:
            raise
    # (Let in: exactly the directory named.)
    handle = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dirfd)
    try:
        st = os.fstat(handle)
        if st.st_uid != os.geteuid():
            raise PermissionError(13, "Permission denied", name)
        if granted is None:  # (the upper's own work directory, removed after: nothing to put back)
            os.chmod(f"/proc/self/fd/{handle}", stat.S_IMODE(st.st_mode) | 0o700)
        else:
            note = widened.widen(handle, stat.S_IMODE(st.st_mode), stat.S_IMODE(st.st_mode) | (real or 0o700))
            granted.append((handle, st, note))
        return os.open(f"/proc/self/fd/{handle}", _TREE_DIR & ~os.O_NOFOLLOW)
    finally:
        if granted is None or not granted or granted[-1][0] != handle:
            os.close(handle)


def granting() -> bool:
    """Whether an :func:`own_dirs_as_found` scope runs (in this thread)."""
    return _GRANTED.get() is not None


def as_found(st: os.stat_result) -> os.stat_result:
    """What ``st``'s directory was before a scope running in this thread let it in (its mode and ctime then), or
    ``st`` itself: the scope's own grant is no change to it."""
    for granted in _SCOPES.get():
        for _handle, before, note in granted:
            if (before.st_dev, before.st_ino) == (st.st_dev, st.st_ino) and note != _SETTLED:
                return before
    return st


_SETTLED = -2  # (a grant whose mode a step then set on purpose: not put back)


def settled(st: os.stat_result, mode: int) -> None:
    """The directory ``st``, let in by a scope running in this thread, was just given ``mode`` on purpose (an
    apply's or an undo's ``chmod``): the scope's end gives it that mode, not the one it found, and until then it
    stays let in (red team 67 F1: an undo's ``chmod 700 d`` of a directory it had let in with 0700 was undone at the
    scope's end; ``chmod 644 d`` before the step that writes in it closed it to that step)."""
    for granted in _SCOPES.get():
        for index, (handle, before, note) in enumerate(granted):
            if (before.st_dev, before.st_ino) != (st.st_dev, st.st_ino) or note == _SETTLED:
                continue
            if note < 0 or not widened.settle(handle, note, mode):
                widened.forget(note)
                granted[index] = (handle, before, _SETTLED)


@contextlib.contextmanager
def own_dirs_as_found(looked: Callable[[os.stat_result, os.stat_result], None] | None = None) -> Iterator[None]:
    """Directories of this user's that :func:`open_own_dir` lets in while this runs (in this thread) get their modes
    back at its end — through the very inode, wherever a rename took it meanwhile: a walk or a landing of a
    command's copy leaves each directory as the command left it (red team 63 F1: a new directory of mode 000
    landed as 0700). ``looked`` is told each (what it was, what it is after): the real tree's directories moved
    their ctime only for the look (``name_changes.note``)."""
    granted: list[tuple[int, os.stat_result, int]] = []
    token, scopes = _GRANTED.set(granted), _SCOPES.set((*_SCOPES.get(), granted))
    try:
        yield
    finally:
        _SCOPES.reset(scopes)
        _GRANTED.reset(token)
        for handle, before, note in reversed(granted):
            with contextlib.suppress(OSError):
                if note == _SETTLED:
                    pass
                elif widened.narrow(handle, stat.S_IMODE(before.st_mode), note) and looked is not None:
                    looked(before, os.fstat(handle))
            os.close(handle)


def _emptiable(fd: int) -> int:
    """A directory of this user's about to be emptied, given write and search permission first (Go leaves its
    module cache 0555, ``chmod -w`` a tree): its entries are removed, not left behind with a warning (red team 59
    F1: a deleted tree set aside stayed in the project). Another user's is left as it is."""
    with contextlib.suppress(OSError):
        st = os.fstat(fd)
        if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) & 0o700 != 0o700:
            os.fchmod(fd, stat.S_IMODE(st.st_mode) | 0o700)
    return fd


def remove_tree(path: Path) -> None:
    """Remove a tree a command may have shaped (see ``remove_below``); the path's own parents are trusted."""
    parent_path, top = os.path.split(os.path.normpath(os.fspath(path)))
    try:
        base = os.open(parent_path or ".", _TREE_DIR & ~os.O_NOFOLLOW)
    except OSError as exc:
        log.warning("cannot remove %s: %s", path, exc)
        return
    try:
        remove_below(base, top)
    finally:
        os.close(base)


def remove_dead(area: Path, *, unlocked_legacy: bool = False, keep: Callable[[Path], bool] | None = None) -> int:
    """Remove every dead server's directory in ``area`` (see ``files.liveness``) with what it holds, but those
    ``keep`` says are still needed; how many."""
    removed = 0
    for owned, fd in dead_dirs(area, unlocked_legacy=unlocked_legacy):
        try:
            if keep is not None and keep(owned):
                continue
            remove_tree(owned)
            removed += 1
        finally:
            if fd >= 0:
                os.close(fd)
    return removed


def set_dir_time(dirfd: int, name: str, real: os.stat_result, mtime_ns: int) -> bool:
    """Give the directory ``name`` (as ``real`` found it) the modification time ``mtime_ns``; False where it is not
    this user's to set: a directory of someone else's they may write in (a teammate's root, group-writable) keeps
    the time the kernel gave it as entries went in or out, as natively (red team 68 F5: every call that made a file
    there was a "conflict" on it)."""
    try:
        os.utime(name, ns=(real.st_atime_ns, mtime_ns), dir_fd=dirfd, follow_symlinks=False)
    except PermissionError:
        if real.st_uid == os.geteuid():
            raise
        return False
    return True


def remove_below(base: int, top: str) -> None:
    """Remove ``top`` below the open directory ``base``: an fd-relative walk that never follows a link, at any
    depth (no recursion, two descriptors open: a command can make a tree thousands of levels deep), letting our
    own unreadable directories in first (``open_own_dir``). What cannot be removed is logged and left."""
    path = top
    fd = -1
    try:
        try:
            if not stat.S_ISDIR(os.stat(top, dir_fd=base, follow_symlinks=False).st_mode):
                os.unlink(top, dir_fd=base)
                return
            fd = _emptiable(open_own_dir(top, base))
        except FileNotFoundError:
            return
        stack: list[tuple[str, list[str]]] = [(top, os.listdir(fd))]
        while stack:
            name, pending = stack[-1]
            if pending:
                entry = pending.pop()
                try:
                    if stat.S_ISDIR(os.stat(entry, dir_fd=fd, follow_symlinks=False).st_mode):
                        child = _emptiable(open_own_dir(entry, fd))
                        os.close(fd)
                        fd = child
                        stack.append((entry, os.listdir(fd)))
                    else:
                        os.unlink(entry, dir_fd=fd)
                except FileNotFoundError:
                    pass
                except OSError as exc:
                    log.warning("cannot remove %s in %s: %s", entry, path, exc)
                continue
            stack.pop()
            # Up one level through the directory's own "..": its parent in fact, never a link.
            parent = os.open("..", _TREE_DIR & ~os.O_NOFOLLOW, dir_fd=fd) if stack else os.dup(base)
            os.close(fd)
            fd = parent
            try:
                os.rmdir(name, dir_fd=fd)
            except FileNotFoundError:
                pass
            except OSError as exc:
                log.warning("cannot remove %s: %s", path if not stack else name, exc)
    except OSError as exc:
        log.warning("cannot remove %s: %s", path, exc)
    finally:
        if fd >= 0:
            os.close(fd)


__all__ = ["open_own_dir", "own_dirs_as_found", "remove_below", "remove_dead", "remove_tree", "set_dir_time"]
