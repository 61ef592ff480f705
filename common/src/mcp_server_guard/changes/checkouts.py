"""What the user's git would write into the work tree later, as a change set the judgement reads like any other.

Threat (red team 78 F2): a file that arrives by a checkout later (a branch, the index, the stash a command left)
got only the protected-path list, while the same bytes written now get every judgement — a ``package.json`` with a
``postinstall`` committed to a branch, an executable ``bin/ls`` where ``.envrc`` puts ``bin`` on PATH: the user's
``git checkout feature`` then writes it, outside the box, and ``npm install`` runs it. So each path a later checkout
writes (``changes.git_refs.Later``: its path, git's mode and its bytes) is laid out in a scratch directory of the
server's own, next to the command's upper layer (the command never reaches it), and judged there as a write of that
path in the real tree would be (``changes.effects``); a path git itself would refuse to check out is asked.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator, Sequence

from mcp_server_guard.changes.changeset import Change, ChangeSet, Kind
from mcp_server_guard.changes.git_refs import Later
from mcp_server_guard.changes.nofollow import lstat_beneath

__all__ = ["laid_out", "odd_path", "rounds"]

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_LINK, _EXECUTABLE = 0o120000, 0o100755


def odd_path(path: str) -> bool:
    """A path git refuses to check out (an empty, ``.``, ``..`` or ``.git`` component, in any case): a tree a
    command built by hand may hold one; laid out as it is, it would lead outside the scratch directory."""
    return any(part in ("", ".", "..") or part.lower() == ".git" or "\0" in part for part in path.split("/"))


def rounds(laters: Sequence[Later]) -> Iterator[list[Later]]:
    """The writes in groups with each path at most once (a stash can give one path twice: its tree and its index)."""
    pending = list(laters)
    while pending:
        taken: dict[str, Later] = {}
        rest: list[Later] = []
        for later in pending:
            (rest.append(later) if later.path in taken else taken.__setitem__(later.path, later))
        yield list(taken.values())
        pending = rest


def laid_out(root: str, scratch: str, laters: Sequence[Later]) -> ChangeSet:
    """A change set of ``root`` whose upper layer is the empty directory ``scratch`` (the server's own), holding
    each of ``laters`` (no odd path) as a checkout would write it; directories made on the way are not changes."""
    changes: list[Change] = []
    top = os.open(scratch, _DIR)
    try:
        for later in laters:
            if odd_path(later.path):  # (the caller asks for these; never laid out, whoever calls)
                raise OSError(errno.EINVAL, f"{later.path!r} is no path a checkout writes")
            parts = later.path.split("/")
            fd = os.dup(top)
            try:
                for part in parts[:-1]:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o755, dir_fd=fd)
                    nxt = os.open(part, _DIR, dir_fd=fd)
                    os.close(fd)
                    fd = nxt
                changes.append(_written(root, fd, parts[-1], later))
            finally:
                os.close(fd)
    finally:
        os.close(top)
    return ChangeSet(root=root, upper=scratch, changes=tuple(changes))


def _written(root: str, fd: int, name: str, later: Later) -> Change:
    kind: Kind = "file"
    if later.mode == _LINK:
        os.symlink(os.fsdecode(later.data), name, dir_fd=fd)
        kind, mode = "symlink", 0o777
    else:
        mode = 0o755 if later.mode == _EXECUTABLE else 0o644
        file = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=fd)
        try:
            view = memoryview(later.data)
            while view:
                view = view[os.write(file, view) :]
            os.fchmod(file, mode)
        finally:
            os.close(file)
    real = lstat_beneath(root, later.path)
    if real is not None and not stat.S_ISDIR(real.st_mode):
        return Change(later.path, "modify", kind, size=len(later.data), old_size=real.st_size, mode=mode,
                      old_mode=stat.S_IMODE(real.st_mode))  # fmt: skip
    return Change(later.path, "create", kind, size=len(later.data), mode=mode)
