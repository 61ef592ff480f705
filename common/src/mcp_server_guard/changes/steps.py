"""Each step of a plan, against the real tree: what ``changes.apply`` runs, one step at a time.

An apply's steps: a file, symlink, FIFO or whole directory tree of the command's renamed into place (``tree``,
``place``; merged entry by entry where a directory appeared meanwhile), a running job's copied (``copy``), a mode
change (``meta``), a deletion (``delete``). An undo's: what a call made moved away (``remove``), what it replaced
or deleted brought back (``restore``), a mode change reverted (``unmeta``). What a step replaces or deletes goes
to the history store under the call's audit id first. A path someone changed since the command started is a
:class:`~mcp_server_guard.changes.plan.Conflict`: the command's version goes beside it, or the step is skipped;
nothing of the real tree is overwritten. Every path is reached through ``changes.nofollow``, no link followed.

Not here: which steps there are (``changes.plan``), nor the run around them — the journal, the order, the
record of the call (``changes.apply``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import posixpath
import stat
from typing import Any

from mcp_server_guard.changes.nofollow import (
    DIR,
    Changed,
    copy_beside,
    free_name_beside,
    held,
    identity,
    lstat_at,
    now_ns,
    parent,
    rename_at,
    unchanged,
)
from mcp_server_guard.changes.plan import Applied, Conflict, Op
from mcp_server_guard.changes.upper import Change
from mcp_server_guard.files.history import HistoryError, HistoryStore, file_kind

__all__ = ["run_step"]

log = logging.getLogger("mcp_server_guard.changes")


def run_step(
    history: HistoryStore, op: Op, root: int, upper: int, plan: dict[str, Any]
) -> tuple[list[Applied], list[Conflict]]:
    """Run one step: what it applied, and its conflict (a step that failed, or found the path changed, is one)."""
    audit_id, started = str(plan["audit_id"]), int(plan["started_ns"])
    baseline: dict[str, int] = plan.setdefault("baseline", {})
    absolute = posixpath.join(op.root, op.path)
    try:
        if op.kind in ("tree", "place"):
            return _place(history, op, root, upper, audit_id, started, baseline.get(absolute))
        if op.kind == "copy":
            return _copy(history, op, root, upper, audit_id, started, baseline)
        if op.kind == "meta":
            return _meta(op, root, started, baseline)
        if op.kind == "delete":
            return _delete(history, op, root, audit_id, started, baseline), []
        if op.kind == "remove":
            return _remove(history, op, root, audit_id), []
        if op.kind == "restore":
            return _restore(history, op, root), []
        if op.kind == "unmeta":
            return _unmeta(op, root), []
        raise ValueError(op.kind)
    except Changed as exc:
        return [], [Conflict(absolute, f"not {_verb(op.kind)}: {exc}")]
    except OSError as exc:
        log.warning("could not apply %s %s: %s", op.kind, absolute, exc)
        return [], [Conflict(absolute, f"not {_verb(op.kind)}: {exc.strerror or exc}")]


def _place(
    history: HistoryStore, op: Op, root: int, upper: int, audit_id: str, started: int, left: int | None = None
) -> tuple[list[Applied], list[Conflict]]:
    """A file, symlink, FIFO or whole directory tree of the command's, into the real tree."""
    change = Change(**op.change)
    absolute = posixpath.join(op.root, op.path)
    with contextlib.ExitStack() as stack:
        src_dir, name = stack.enter_context(parent(upper, op.path))
        ours = lstat_at(name, src_dir)
        if ours is None:
            return [], []  # placed before a crash (recover): nothing left to place
        dst_dir, _ = stack.enter_context(parent(root, op.path))
        real = lstat_at(name, dst_dir)
        tree = stat.S_ISDIR(ours.st_mode)
        replacing = real is not None and (change.opaque or stat.S_ISDIR(real.st_mode) != tree)

        def aside(why: str) -> tuple[list[Applied], list[Conflict]]:
            return _aside(src_dir, name, dst_dir, absolute, audit_id, why, tree)

        if real is None:
            if change.origin or left is not None:
                return aside("it was deleted meanwhile")
            try:
                rename_at(src_dir, name, dst_dir, name, noreplace=True)
            except FileExistsError:
                return aside("it was created meanwhile")
            return [_placed(absolute, change, dst_dir, name, "", tree)], []
        if tree and not replacing:
            return _merge(src_dir, name, dst_dir, absolute, audit_id, started)
        if change.action == "create" and not replacing and left is None:
            return aside("it was created meanwhile")
        try:
            if not _kept_already(history, op.entry, real):
                counted = unchanged(dst_dir, name, real, started, left)
            else:
                counted = (0, 0)  # linked into the history before a crash (which changed its ctime): ours
            with held(dst_dir, name, real):
                entry = history.keep(
                    dst_dir, name, absolute, audit_id, move=replacing, entry_id=op.entry, durable=False,
                    tree=counted,
                )  # fmt: skip
                rename_at(src_dir, name, dst_dir, name, noreplace=replacing)
        except Changed as exc:
            return aside(str(exc))
        return [_placed(absolute, change, dst_dir, name, entry.id, tree)], []


def _kept_already(history: HistoryStore, entry_id: str, real: os.stat_result) -> bool:
    """Whether ``real`` is the very inode this step linked into the history (a step replayed after a crash)."""
    try:
        kept = os.lstat(history.directory / f"{entry_id}.data")
    except OSError:
        return False
    return (kept.st_dev, kept.st_ino) == (real.st_dev, real.st_ino)


def _placed(absolute: str, change: Change, dirfd: int, name: str, before: str, tree: bool) -> Applied:
    placed = lstat_at(name, dirfd)
    after = identity(placed) if placed is not None else ()
    return Applied(absolute, "modify" if before else "create", change.kind, before=before, after=after, tree=tree)


def _merge(
    src_dir: int, name: str, dst_dir: int, absolute: str, audit_id: str, started: int
) -> tuple[list[Applied], list[Conflict]]:
    """A directory of the command's where the real tree has one now (made meanwhile): entry by entry."""
    records: list[Applied] = []
    conflicts: list[Conflict] = []
    src = os.open(name, DIR | os.O_NOFOLLOW, dir_fd=src_dir)
    dst = os.open(name, DIR | os.O_NOFOLLOW, dir_fd=dst_dir)
    try:
        with os.scandir(src) as entries:
            names = sorted(e.name for e in entries)
        for child in names:
            ours = lstat_at(child, src)
            if ours is None:
                continue
            path = posixpath.join(absolute, child)
            real = lstat_at(child, dst)
            if real is None:
                rename_at(src, child, dst, child, noreplace=True)
                placed = lstat_at(child, dst)
                records.append(Applied(path, "create", "dir" if stat.S_ISDIR(ours.st_mode) else "file",
                                       after=identity(placed) if placed else (),
                                       tree=stat.S_ISDIR(ours.st_mode)))  # fmt: skip
            elif stat.S_ISDIR(ours.st_mode) and stat.S_ISDIR(real.st_mode):
                more, clashes = _merge(src, child, dst, path, audit_id, started)
                records += more
                conflicts += clashes
            else:
                _, clash = _aside(src, child, dst, path, audit_id, "it was created meanwhile",
                                       stat.S_ISDIR(ours.st_mode))  # fmt: skip
                conflicts += clash
    finally:
        os.close(src)
        os.close(dst)
    return records, conflicts


def _aside(
    src_dir: int, name: str, dst_dir: int, absolute: str, audit_id: str, why: str, tree: bool
) -> tuple[list[Applied], list[Conflict]]:
    """The command's version goes beside what is there now; nothing of the real tree is touched."""
    beside = free_name_beside(name, audit_id, dst_dir)
    rename_at(src_dir, name, dst_dir, beside, noreplace=True)
    placed = lstat_at(beside, dst_dir)
    where = posixpath.join(posixpath.dirname(absolute), beside)
    record = Applied(where, "create", "dir" if tree else "file", after=identity(placed) if placed else (),
                     tree=tree)  # fmt: skip
    return [record], [Conflict(absolute, f"{why}: the command's version is beside it, as {beside}")]


def _meta(op: Op, root: int, started: int, baseline: dict[str, int]) -> tuple[list[Applied], list[Conflict]]:
    change = Change(**op.change)
    absolute = posixpath.join(op.root, op.path)
    with parent(root, op.path) as (dirfd, name):
        real = lstat_at(name, dirfd)
        if real is None or stat.S_ISLNK(real.st_mode):
            raise Changed("it is gone")
        if not stat.S_ISDIR(real.st_mode):
            unchanged(dirfd, name, real, started, baseline.get(absolute))
        elif real.st_ctime_ns > started:
            raise Changed("it changed after the command started")
        with held(dirfd, name, real):
            os.chmod(name, change.mode, dir_fd=dirfd)
            if change.kind != "dir" and change.mtime_ns:
                os.utime(name, ns=(real.st_atime_ns, change.mtime_ns), dir_fd=dirfd)
        now = lstat_at(name, dirfd)
        after = identity(now) if now is not None else ()
        if now is not None:
            baseline[absolute] = now.st_ctime_ns
    return [Applied(absolute, "meta", change.kind, after=after, old_mode=stat.S_IMODE(real.st_mode),
                    old_mtime_ns=real.st_mtime_ns)], []  # fmt: skip


def _delete(
    history: HistoryStore, op: Op, root: int, audit_id: str, started: int, baseline: dict[str, int]
) -> list[Applied]:
    absolute = posixpath.join(op.root, op.path)
    with parent(root, op.path) as (dirfd, name):
        kept = history.directory / f"{op.entry}.json"
        real = lstat_at(name, dirfd)
        if real is None:
            if kept.exists():  # deleted before a crash (recover)
                return [Applied(absolute, "delete", "file", before=op.entry)]
            return []  # gone already: nothing to delete
        counted = unchanged(dirfd, name, real, started, baseline.get(absolute))
        with held(dirfd, name, real):
            entry = history.keep(dirfd, name, absolute, audit_id, move=True, entry_id=op.entry, durable=False,
                                      tree=counted)  # fmt: skip
        baseline.pop(absolute, None)
    kind = "dir" if stat.S_ISDIR(real.st_mode) else Change(**op.change).kind
    return [Applied(absolute, "delete", kind, before=entry.id, tree=stat.S_ISDIR(real.st_mode))]


def _copy(
    history: HistoryStore, op: Op, root: int, upper: int, audit_id: str, started: int, baseline: dict[str, int]
) -> tuple[list[Applied], list[Conflict]]:
    """A running job's file, directory, symlink or FIFO, copied into the real tree (the job still owns its
    upper layer: nothing is moved out of it). A file still being written is left for the next look."""
    change = Change(**op.change)
    absolute = posixpath.join(op.root, op.path)
    left = baseline.get(absolute)
    with contextlib.ExitStack() as stack:
        src_dir, name = stack.enter_context(parent(upper, op.path))
        ours = lstat_at(name, src_dir)
        if ours is None:
            return [], []
        dst_dir, _ = stack.enter_context(parent(root, op.path))
        real = lstat_at(name, dst_dir)
        if stat.S_ISDIR(ours.st_mode):
            if real is None:
                os.mkdir(name, stat.S_IMODE(ours.st_mode), dir_fd=dst_dir)
                placed = lstat_at(name, dst_dir)
                return [Applied(absolute, "create", "dir", after=identity(placed) if placed else ())], []
            if not stat.S_ISDIR(real.st_mode):
                raise Changed("a file is there, where the job made a directory")
            return [], []
        if (
            file_kind(ours.st_mode) != change.kind
            or stat.S_IMODE(ours.st_mode) != change.mode
            or (change.kind == "file" and ours.st_size != change.size)
        ):
            return [], []  # not what was judged (the job changed it since): the next look judges it again
        if real is None and (change.origin or left is not None):
            raise Changed("it was deleted meanwhile")
        if real is not None:
            if stat.S_ISDIR(real.st_mode):
                raise Changed("a directory is there")
            if change.action == "create" and left is None:
                raise Changed("it was created meanwhile")
            if not _kept_already(history, op.entry, real):
                unchanged(dst_dir, name, real, started, left)
        temp = copy_beside(src_dir, name, ours, dst_dir)
        if temp is None:
            return [], []  # still being written: the next look takes it
        try:
            before = ""
            if real is not None:
                with held(dst_dir, name, real):
                    before = history.keep(dst_dir, name, absolute, audit_id, move=False, entry_id=op.entry,
                                               durable=False).id  # fmt: skip
                    os.rename(temp, name, src_dir_fd=dst_dir, dst_dir_fd=dst_dir)
            else:
                rename_at(dst_dir, temp, dst_dir, name, noreplace=True)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dst_dir)
            raise
        placed = lstat_at(name, dst_dir)
        if placed is not None:
            baseline[absolute] = placed.st_ctime_ns
        after = identity(placed) if placed is not None else ()
    return [Applied(absolute, "modify" if before else "create", change.kind, before=before, after=after)], []


# -- undo steps ----------------------------------------------------------------------------------


def _remove(history: HistoryStore, op: Op, root: int, audit_id: str) -> list[Applied]:
    """Undo a creation (or the current version of a modification): what is there goes to the history."""
    absolute = posixpath.join(op.root, op.path)
    with parent(root, op.path) as (dirfd, name):
        real = lstat_at(name, dirfd)
        if real is None:
            return []
        counted = unchanged(dirfd, name, real, now_ns() + 1) if stat.S_ISDIR(real.st_mode) else (0, 0)
        with held(dirfd, name, real):
            entry = history.keep(dirfd, name, absolute, audit_id, move=True, entry_id=op.entry, durable=False,
                                      tree=counted)  # fmt: skip
    kind = "dir" if stat.S_ISDIR(real.st_mode) else "file"
    return [Applied(absolute, "delete", kind, before=entry.id, tree=stat.S_ISDIR(real.st_mode))]


def _restore(history: HistoryStore, op: Op, root: int) -> list[Applied]:
    """Undo a deletion or modification: the kept pre-image comes back (its inode, or a copy)."""
    absolute = posixpath.join(op.root, op.path)
    with parent(root, op.path) as (dirfd, name):
        if lstat_at(name, dirfd) is not None:
            raise Changed("something is there again")
        try:
            entry = history.take(op.entry, dirfd, name)
        except HistoryError as exc:
            raise Changed(exc.message) from None
        placed = lstat_at(name, dirfd)
    after = identity(placed) if placed is not None else ()
    return [Applied(absolute, "create", "dir" if entry.kind == "tree" else entry.kind, after=after,
                    tree=entry.kind == "tree")]  # fmt: skip


def _unmeta(op: Op, root: int) -> list[Applied]:
    record = Applied.of(op.change)
    absolute = posixpath.join(op.root, op.path)
    with parent(root, op.path) as (dirfd, name):
        real = lstat_at(name, dirfd)
        if real is None or stat.S_ISLNK(real.st_mode):
            raise Changed("it is gone")
        os.chmod(name, record.old_mode, dir_fd=dirfd)
        if record.old_mtime_ns and not stat.S_ISDIR(real.st_mode):
            os.utime(name, ns=(real.st_atime_ns, record.old_mtime_ns), dir_fd=dirfd)
    return [Applied(absolute, "meta", record.kind, old_mode=stat.S_IMODE(real.st_mode),
                    old_mtime_ns=real.st_mtime_ns)]  # fmt: skip


def _verb(kind: str) -> str:
    return {"delete": "deleted", "meta": "changed", "remove": "removed", "restore": "restored"}.get(kind, "applied")
