"""Each step of an apply, against the real tree (run one at a time by ``changes.apply``; an undo's are
``changes.revert``'s).

The metadata of what stays (``meta``: mode, modification time, ``user.*`` attributes), a real file renamed whole
(``move``), a file, symlink or whole directory tree of the command's renamed into place (``tree``, ``place``;
merged entry by entry where a directory appeared meanwhile: ``changes.placing``), a running job's copied
(``copy``), a new name of a file (``link``), a deletion (``delete``), and a directory's modification time put
back as the command left it (``times``). What a step replaces or deletes goes to the history store under the
call's audit id first; what lands in the real tree carries none of overlayfs's bookkeeping (``changes.xattrs``).

A path someone changed since the command started is a :class:`~mcp_server_guard.changes.plan.Conflict`: the
command's version goes beside it, or the step is skipped; nothing of the real tree is overwritten. Every path is
reached through ``changes.nofollow``, no link followed; a file or directory whose metadata changes is changed
through a descriptor of the very inode looked at.
"""

from __future__ import annotations

import contextlib
import logging
import os
import posixpath
import stat

from mcp_server_guard import faults
from mcp_server_guard.changes import name_changes
from mcp_server_guard.changes.changeset import MADE, Change, same_bytes
from mcp_server_guard.changes.nofollow import (
    Changed,
    copy_beside,
    free_name_beside,
    held,
    identity,
    lstat_at,
    parent,
    rename_at,
    set_meta,
    thin_like,
)
from mcp_server_guard.changes.plan import NO_TIME, Applied, Conflict, Op, left_as
from mcp_server_guard.changes.run import Run
from mcp_server_guard.changes.xattrs import (
    ACL_NAMES,
    Xattrs,
    acls_alike,
    at,
    carried_by,
    default_acl,
    kept_in_place,
    land,
    seen,
    seen_as,
    set_seen,
)
from mcp_server_guard.files.history import HistoryError, HistoryStore
from mcp_server_guard.files.kept import file_kind
from mcp_server_guard.files.trees import set_dir_time

__all__ = [
    "APPLY_STEPS",
    "change_of",
    "copy_step",
    "half_set",
    "held_stat",
    "kept",
    "kept_already",
    "kept_away",
    "kept_from",
    "kept_group",
    "kept_own",
    "made_again_since",
    "set_aside_before",
    "taken_back",
]

log = logging.getLogger("mcp_server_guard.changes")


def held_stat(fd: int | None) -> os.stat_result | None:
    """A file held (``nofollow.held``) as a step left it."""
    return os.fstat(fd) if fd is not None else None


def change_of(op: Op) -> Change:
    assert op.change is not None, op
    return op.change


def _record(op: Op) -> Applied:
    assert op.record is not None, op
    return op.record


# -- apply steps ---------------------------------------------------------------------------------------


def kept_own(change: Change, real: os.stat_result | None, dst_dir: int, src_dir: int, name: str) -> Xattrs:
    """What the command's file keeps of the real file's own overlay attributes and ACLs: in place (a copy-up), what
    ``kept_in_place`` says; a new file of that name (``rm m; echo > m``) none, as natively, nor another file renamed
    over it (``mv -f a m``: red team 40s, it brings its own). Threat: a file put at its name where no rename note
    sees it (``rm m; ln s m``, RENAME_EXCHANGE) kept the real ACL (5a F1): it stays only where the copy has it too."""
    if real is None or not stat.S_ISREG(real.st_mode) or not (change.over or change.origin or real.st_nlink > 1):
        return ()
    alike = acls_alike(at(dst_dir, name), at(src_dir, name))  # the real ACLs its copy-up carries: no more (5a F1)
    if change.over:
        return alike
    own = kept_in_place(at(dst_dir, name), at(src_dir, name), change.shown)
    return tuple(sorted((*((n, v) for n, v in own if n not in ACL_NAMES), *alike)))


def kept_away(absolute: str, real: os.stat_result, entry_id: str, stays: str = "") -> Applied:
    """The record of what was at ``absolute`` (``real``), kept in the history as ``entry_id`` and gone from there: a
    deletion (also where a step kept it and then could not put what it was to put there)."""
    directory = stat.S_ISDIR(real.st_mode)
    group = (real.st_dev, real.st_ino) if stat.S_ISREG(real.st_mode) else ()
    kind = "dir" if directory else file_kind(real.st_mode)
    return Applied(absolute, "delete", kind, before=entry_id, tree=directory, group=group, stays=stays)


def kept(history: HistoryStore, entry_id: str, dirfd: int = -1) -> os.stat_result | None:
    """What entry ``entry_id`` of the history holds, when it holds its data (a step kept it before a crash; with
    ``dirfd``, the directory of the step's name, a keep that crash cut after setting the name aside is finished
    first: ``HistoryStore.finish_aside``)."""
    if not entry_id or not (history.directory / f"{entry_id}.json").exists():
        return None
    if dirfd >= 0:
        history.finish_aside(entry_id, dirfd)
    for suffix in (".data", ".tree"):
        with contextlib.suppress(OSError):
            return os.lstat(history.directory / f"{entry_id}{suffix}")
    return None


def kept_from(history: HistoryStore, entry_id: str) -> tuple[int, ...]:
    """The (dev, ino) what entry ``entry_id`` keeps had where it was, whatever its kind; () when not said. (A copy
    in a history on another file system is another inode: red team 60 F5 took a symlink's copy for "not it".)"""
    with contextlib.suppress(HistoryError):
        original = history.metadata(entry_id).original
        if len(original) == 2:
            return (original[0], original[1])
    return ()


def kept_group(history: HistoryStore, entry_id: str, now: os.stat_result | None) -> tuple[int, ...]:
    """The (dev, ino) a file kept under ``entry_id`` (``now``: its data, as :func:`kept` found it) had where it was
    — what a step replayed after a crash records as its group (a copy kept beside another name of the file is
    another inode); () for anything but a file."""
    if now is None or not stat.S_ISREG(now.st_mode):
        return ()
    with contextlib.suppress(HistoryError):
        original = history.metadata(entry_id).original
        if len(original) == 2:
            return (original[0], original[1])
    return (now.st_dev, now.st_ino)


def kept_already(
    history: HistoryStore, entry_id: str, real: os.stat_result, dirfd: int, name: str
) -> os.stat_result | None:
    """The file at ``name`` in ``dirfd`` (``real`` when looked at) as it is now, where this step kept it in the
    history before a crash (a step replayed): linked there (the very inode), or copied whole (a history on another
    file system) and the file still as the copy holds it — red team 64 F3: a file its owner may not read, given u+r
    for the copy, had its ctime moved by that, and the replay took it for someone else's change (the command's
    version went beside it). None: not kept by this step, or changed since."""
    try:
        kept = os.lstat(history.directory / f"{entry_id}.data")
    except OSError:
        return None
    if (kept.st_dev, kept.st_ino) == (real.st_dev, real.st_ino):
        return real
    if not (stat.S_ISREG(kept.st_mode) and stat.S_ISREG(real.st_mode) and kept.st_nlink == 1):
        return None
    if (kept.st_size, kept.st_mtime_ns, kept.st_mode) != (real.st_size, real.st_mtime_ns, real.st_mode):
        return None
    where = os.open(history.directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        if not same_bytes(where, f"{entry_id}.data", dirfd, name, real.st_size, as_owner=True):
            return None
    finally:
        os.close(where)
    now = lstat_at(name, dirfd)  # (the read moved its ctime again, where it gave u+r)
    if now is None or (now.st_ino, now.st_size, now.st_mtime_ns) != (real.st_ino, real.st_size, real.st_mtime_ns):
        return None
    return now


def _meta(history: HistoryStore, op: Op, root: int, run: Run, absolute: str) -> list[Applied]:
    change = change_of(op)
    with parent(root, op.path) as (dirfd, name):
        real = lstat_at(name, dirfd)
        if real is None or file_kind(real.st_mode) != change.kind:
            raise Changed("it was deleted or replaced meanwhile")
        have = seen_as(at(dirfd, name), change.xattrs, change.old_xattrs)
        # Replayed after a crash: each of mode, time and attributes is as before or as this step sets it (a kill
        # between two of them): ours, not someone else's change; what was before is what the plan says.
        partly = run.replay and half_set(real, have, change.mode, change.mtime_ns, change.xattrs,
                                         change.old_mode, change.old_mtime_ns, change.old_xattrs)  # fmt: skip
        if stat.S_ISDIR(real.st_mode):
            # A directory's ctime moves whenever anyone adds or removes an entry: what counts is what this step sets.
            if (stat.S_IMODE(real.st_mode) != change.old_mode or have != change.old_xattrs) and not partly:
                raise Changed("its mode or attributes changed meanwhile")
        elif not partly:
            run.unchanged(dirfd, name, real, absolute)
        with held(dirfd, name, real):
            set_meta(dirfd, name, real, change.mode, change.mtime_ns, change.xattrs, have)
        run.ours.add((real.st_dev, real.st_ino))  # its ctime is ours now (its other names' too)
        now = lstat_at(name, dirfd)
        if now is not None:
            run.baseline[absolute] = now.st_ctime_ns
    old_mode, old_mtime = stat.S_IMODE(real.st_mode), real.st_mtime_ns
    if partly:
        old_mode, old_mtime, have = change.old_mode, change.old_mtime_ns or old_mtime, change.old_xattrs
    return [Applied(absolute, "meta", change.kind, after=identity(now) if now is not None else (),
                    old_mode=old_mode, old_mtime_ns=old_mtime,
                    mode=stat.S_IMODE(now.st_mode) if now is not None else change.mode,
                    mtime_ns=now.st_mtime_ns if now is not None else change.mtime_ns,
                    xattrs=change.xattrs, old_xattrs=have)]  # fmt: skip


def half_set(real: os.stat_result, have: Xattrs, mode: int, mtime_ns: int, xattrs: Xattrs, old_mode: int,
             old_mtime_ns: int, old_xattrs: Xattrs) -> bool:  # fmt: skip
    """Whether each of a path's mode, modification time (not a directory's) and attributes is either as before or
    as a metadata step sets it: what a step killed half way leaves."""
    if stat.S_ISLNK(real.st_mode):
        return real.st_mtime_ns in (mtime_ns, old_mtime_ns)
    if stat.S_IMODE(real.st_mode) not in (mode, old_mode) or have not in (xattrs, old_xattrs):
        return False
    return stat.S_ISDIR(real.st_mode) or real.st_mtime_ns in (mtime_ns, old_mtime_ns)


def _move(history: HistoryStore, op: Op, root: int, run: Run, absolute: str) -> list[Applied]:
    """A real file the command renamed whole (with other names that stay: see ``changes.upper``)."""
    change = change_of(op)
    source = posixpath.join(op.root, change.moved_from)
    with parent(root, change.moved_from) as (src_dir, src_name), parent(root, op.path) as (dst_dir, name):
        real = lstat_at(src_name, src_dir)
        there = lstat_at(name, dst_dir)
        if real is None:
            if there is not None and stat.S_ISREG(there.st_mode):
                run.ours.add((there.st_dev, there.st_ino))  # moved before a crash: its ctime is ours (red team 11 F2)
                return [Applied(absolute, "create", "file", moved_from=source, after=identity(there))]  # before a crash
            raise Changed("it was deleted meanwhile")
        if there is not None:
            raise Changed("it was created meanwhile")
        if not stat.S_ISREG(real.st_mode):
            raise Changed("it was replaced meanwhile")
        run.unchanged(src_dir, src_name, real, source)
        with held(src_dir, src_name, real) as fd:
            rename_at(src_dir, src_name, dst_dir, name, noreplace=True)
            run.named(real, held_stat(fd))
        run.placed[absolute] = (real.st_dev, real.st_ino)
        placed = lstat_at(name, dst_dir)
        shown = left_as(dst_dir, name, placed)  # (while ``dst_dir`` is open)
    return [Applied(absolute, "create", "file", moved_from=source, after=identity(placed) if placed else (),
                    **shown)]  # fmt: skip


def _link(history: HistoryStore, op: Op, root: int, run: Run, absolute: str) -> list[Applied]:
    """Another name of a real file (``ln a b``; the other names of a file the command rewrote)."""
    change = change_of(op)
    target = posixpath.join(op.root, change.link)
    if target in run.failed:
        raise Changed(f"{change.link} was not applied")
    with parent(root, change.link) as (src_dir, src_name), parent(root, op.path) as (dirfd, name):
        source = lstat_at(src_name, src_dir)
        if source is None or not stat.S_ISREG(source.st_mode):
            raise Changed(f"{change.link} is gone")
        # Threat: the file a name is to be made of swapped (rewritten by another call, replaced) between the
        # judgement and now: it must be what this run placed there, or the real file as the command found it.
        real = lstat_at(name, dirfd)
        temp = f".mcp-guard-{op.entry}.tmp"
        # In place of what the command replaced wholesale (``rm -r d; mv h2 d``): that goes to the history first.
        replacing = change.opaque and not change.top
        linked_before = False  # a crash cut this step after it made a name of the file (which changed its ctime)
        if run.replay:
            left = lstat_at(temp, dirfd)
            linked_before = left is not None and (left.st_dev, left.st_ino) == (source.st_dev, source.st_ino)
            if left is not None:
                os.unlink(temp, dir_fd=dirfd)  # made before a crash, not yet renamed
            if real is not None and (real.st_dev, real.st_ino) == (source.st_dev, source.st_ino):
                # One file already: linked before a crash (which changed its ctime). Recorded as it was done.
                run.ours.add((source.st_dev, source.st_ino))
                before = kept(history, op.entry)
                if len(group := kept_group(history, op.entry, before)) == 2:
                    run.ours.add((group[0], group[1]))  # the file whose name it took: its ctime moved then too
                return [Applied(absolute, "modify" if before is not None else "create", "file",
                                before=op.entry if before is not None else "", link=target,
                                group=kept_group(history, op.entry, before), after=identity(real))]  # fmt: skip
        if target in run.placed:
            if run.placed[target] != (source.st_dev, source.st_ino):
                raise Changed(f"{change.link} is not what was applied there")
        elif _in_placed_tree(target, run, op.root):
            pass  # a file of a tree this run just placed (``mkdir e && mv h1 e/n && echo z >> e/n``): ours
        elif not linked_before:
            try:
                run.unchanged(src_dir, src_name, source, target)
            except Changed:
                # Written by someone else since the command started (another call appended to it, file_write
                # replaced it): a new name of it is as if their change came first. Never in place of anything. (A
                # name of a file that has others, outside the root too, writes nothing through them: every writer
                # replaces a file, and one rewritten in place reaches its other names only all inside the root.)
                if change.action != "create" or real is not None:
                    raise
        if real is not None and (real.st_dev, real.st_ino) == (source.st_dev, source.st_ino):
            return []  # one file already
        run.ours.add((source.st_dev, source.st_ino))  # a new name changes its ctime, not what it holds
        if real is None:
            if change.action == "modify":
                raise Changed("it was deleted meanwhile")
            before = kept(history, op.entry, dirfd) if run.replay and replacing else None  # kept before a crash
            linked = lstat_at(src_name, src_dir) or source
            os.link(src_name, name, src_dir_fd=src_dir, dst_dir_fd=dirfd, follow_symlinks=False)
            placed = lstat_at(name, dirfd)
            run.named(linked, placed)
            if before is not None:
                return [Applied(absolute, "modify", "file", before=op.entry, link=target,
                                group=kept_group(history, op.entry, before),
                                after=identity(placed) if placed else ())]  # fmt: skip
            return [Applied(absolute, "create", "file", link=target, after=identity(placed) if placed else (),
                            **left_as(dirfd, name, placed))]  # fmt: skip
        if replacing:
            return _link_replacing(history, op, run, absolute, (src_dir, src_name, source), (dirfd, name), real)
        if change.action == "create" or stat.S_ISDIR(real.st_mode):
            raise Changed("it was created meanwhile")
        if (kept_now := kept_already(history, op.entry, real, dirfd, name)) is None:
            run.unchanged(dirfd, name, real, absolute)
        else:
            real = kept_now
        linked = lstat_at(src_name, src_dir) or source
        os.link(src_name, temp, src_dir_fd=src_dir, dst_dir_fd=dirfd, follow_symlinks=False)
        run.named(linked, lstat_at(temp, dirfd))
        try:
            with held(dirfd, name, real) as fd:
                entry = history.keep(dirfd, name, absolute, run.audit_id, move=False, entry_id=op.entry,
                                     durable=False)  # fmt: skip
                faults.point(f"link {absolute}")
                renamed = lstat_at(temp, dirfd) or linked  # (the file linked, as it is just before its rename)
                os.rename(temp, name, src_dir_fd=dirfd, dst_dir_fd=dirfd)
                run.named(real, held_stat(fd))
                run.named(renamed, lstat_at(name, dirfd))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dirfd)
            raise
        placed = lstat_at(name, dirfd)
    return [Applied(absolute, "modify", "file", before=entry.id, link=target, group=(real.st_dev, real.st_ino),
                    after=identity(placed) if placed else ())]  # fmt: skip


def _link_replacing(history: HistoryStore, op: Op, run: Run, absolute: str, source: tuple[int, str, os.stat_result],
                    at_name: tuple[int, str], real: os.stat_result) -> list[Applied]:  # fmt: skip
    """A name of a real file made where the command replaced what was there (a directory, a file, a link): what
    was there is kept (moved whole into the history), then the name is made — one step, undone as one."""
    src_dir, src_name, source_st = source
    dirfd, name = at_name
    target = posixpath.join(op.root, change_of(op).link)
    counted = run.unchanged(dirfd, name, real, absolute)
    with held(dirfd, name, real) as fd:
        entry = history.keep(dirfd, name, absolute, run.audit_id, move=True, entry_id=op.entry, durable=False,
                             tree=counted, links=run.tree_links.get(absolute))  # fmt: skip
        run.named(real, held_stat(fd))
    faults.point(f"link {absolute}")
    linked = lstat_at(src_name, src_dir) or source_st
    try:
        os.link(src_name, name, src_dir_fd=src_dir, dst_dir_fd=dirfd, follow_symlinks=False)
    except FileExistsError:
        # (Made by someone else since what was there was kept: that is gone as the command did, and recorded.)
        raise Changed("it was created meanwhile", done=[kept_away(absolute, real, entry.id)]) from None
    placed = lstat_at(name, dirfd)
    run.named(linked, placed)
    group = (real.st_dev, real.st_ino) if stat.S_ISREG(real.st_mode) else ()
    return [Applied(absolute, "modify", "file", before=entry.id, link=target, group=group,
                    after=identity(placed) if placed else ())]  # fmt: skip


def _in_placed_tree(path: str, run: Run, root: str) -> bool:
    """Whether a directory above ``path`` (below ``root``) is a tree this run placed."""
    top = root.rstrip("/")
    parent = posixpath.dirname(path)
    while parent.startswith(f"{top}/"):
        if parent in run.placed:
            return True
        parent = posixpath.dirname(parent)
    return False


def set_aside_before(history: HistoryStore, op: Op, run: Run, dirfd: int) -> bool:
    """Whether a crash cut this step after it set what was at its name aside (``kept._keep_aside``): the keep is
    finished now, and whatever is at the name since is someone else's (red team 57 F2: the step took it for a
    change meanwhile and left the aside name in the project)."""
    return run.replay and history.finish_aside(op.entry, dirfd)


def taken_back(history: HistoryStore, entry_id: str, dirfd: int, name: str, audit_id: str) -> str:
    """What a step kept as ``entry_id`` taken back out of the history: to ``name`` where that is free, else beside
    what is there (its name is returned; "" for ``name``)."""
    try:
        history.take(entry_id, dirfd, name)
        return ""
    except FileExistsError:
        beside = free_name_beside(name, audit_id, dirfd)
        history.take(entry_id, dirfd, beside)
        return beside


def made_again_since(history: HistoryStore, op: Op, run: Run, root: int) -> str:
    """For a replayed undo step that set what was at its name (below ``root``) aside before a crash
    (``set_aside_before``), the name made again since by someone else: what it set aside goes beside theirs (its
    name; "" where nothing was set aside, the name is free, or the step is no replay). Red team 58 F1: their file
    was taken for what the call left."""
    if not run.replay:
        return ""
    with parent(root, op.path) as (dirfd, name):
        if lstat_at(name, dirfd) is None or not set_aside_before(history, op, run, dirfd):
            return ""
        return taken_back(history, op.entry, dirfd, name, run.audit_id)


def _delete(history: HistoryStore, op: Op, root: int, run: Run, absolute: str) -> list[Applied]:
    change = change_of(op)
    staying = posixpath.join(op.root, change.stays) if change.stays else ""
    with parent(root, op.path) as (dirfd, name):
        real = lstat_at(name, dirfd)
        if real is None or set_aside_before(history, op, run, dirfd):
            before = kept(history, op.entry, dirfd) if run.replay else None
            if before is not None:  # deleted before a crash: recorded as it was done
                # (the file it was, not the history's copy of it: a file with other names is kept as a copy, and an
                # undo makes the name one with them again only where its group is theirs)
                group = kept_group(history, op.entry, before)
                if len(group) == 2:
                    # the name it took from a file with others moved their ctime then: ours, not someone else's
                    # change (red team 16 F5: a later step took the file's other name for one changed meanwhile)
                    run.ours.add((group[0], group[1]))
                return [Applied(absolute, "delete", change.kind, before=op.entry, stays=staying, group=group,
                                tree=stat.S_ISDIR(before.st_mode))]  # fmt: skip
            return []  # gone already: nothing to delete
        counted = run.unchanged(dirfd, name, real, absolute)
        with held(dirfd, name, real) as fd:
            entry = history.keep(dirfd, name, absolute, run.audit_id, move=True, entry_id=op.entry, durable=False,
                                 tree=counted, links=run.tree_links.get(absolute))  # fmt: skip
            run.named(real, held_stat(fd))
        run.baseline.pop(absolute, None)
        run.baseline.pop(MADE + absolute, None)
    return [kept_away(absolute, real, entry.id, staying)]


def _times(history: HistoryStore, op: Op, root: int, run: Run, absolute: str) -> list[Applied]:
    """A directory's modification time as the command left it (entries applied into it changed it). Not where
    someone else changed the directory while the command ran: their change is the later one."""
    time = op.time
    assert time is not None
    try:
        with parent(root, op.path) as (dirfd, name):
            real = lstat_at(name, dirfd)
            if real is None or not stat.S_ISDIR(real.st_mode):
                return []
            # (A step of this run that re-moded it moved its ctime on in the baseline: what the job's looks left
            # counts, as read before the run.)
            left = (run.baseline.get(absolute), run.looked.get(absolute))
            changed_by_others = time.ctime_ns > run.started and time.ctime_ns not in left
            # What the directory's time was when the command started, where others' changes since were this
            # process's applies (their renames into it left its time as it was: red team 11 F3).
            at_start = name_changes.dir_time_at(real, time.ctime_ns, run.started) if changed_by_others else None
            if at_start is not None and real.st_mtime_ns == at_start:
                changed_by_others = False  # its time is as the command found it: the command's own stands
            if real.st_mtime_ns != time.mtime_ns and not changed_by_others:
                set_dir_time(dirfd, name, real, time.mtime_ns)
            now = lstat_at(name, dirfd)
    except Changed:
        return []  # not there (a tree set aside or refused): nothing to put back
    if changed_by_others and real.st_mtime_ns != time.mtime_ns:
        # Not set: said where the command set it itself (``touch -d``: a change of its own; red team 9 F4), which
        # is known where the time it had when the command started is (others' changes were this process's).
        # (set before the start by more than the coarse clock's tick: an entry made just as the command started can
        # stamp a time a tick earlier than the start)
        purposely = time.set_on_purpose(run.started - name_changes.TICK_NS)
        if purposely and at_start is not None and time.mtime_ns != at_start:
            raise Changed("someone else changed the directory after the command started: it keeps their time")
        return []
    name_changes.note_dir(real, time.ctime_ns, time.old_mtime_ns, run.began)
    if now is not None:
        run.baseline[absolute] = now.st_ctime_ns
    mtime = now.st_mtime_ns if now is not None else time.mtime_ns
    # A directory the command made has no time before (an undo removes it; an undo of that undo puts this back).
    before = NO_TIME if time.ctime_ns == -1 else time.old_mtime_ns
    return [Applied(absolute, "times", "dir", old_mtime_ns=before, mtime_ns=mtime)]


def copy_step(
    history: HistoryStore, op: Op, root: int, upper: int, run: Run, absolute: str
) -> tuple[list[Applied], list[Conflict]]:
    """A running job's file, directory, symlink or FIFO, copied into the real tree (the job still owns its
    upper layer: nothing is moved out of it). A file still being written is left for the next look."""
    change = change_of(op)
    left = run.baseline.get(absolute)
    with contextlib.ExitStack() as stack:
        src_dir, name = stack.enter_context(parent(upper, op.path))
        ours = lstat_at(name, src_dir)
        if ours is None:
            return [], []
        dst_dir, _ = stack.enter_context(parent(root, op.path))
        real = lstat_at(name, dst_dir)
        # Threat (red team 90 F1): the job swapped what the look judged (a file ``.vscode``, allowed) for another kind
        # or mode (a directory ``.vscode``, refused) before the copy: whatever it is, a directory too, it is copied
        # only as judged; else the next look judges it again.
        if (
            file_kind(ours.st_mode) != change.kind
            or stat.S_IMODE(ours.st_mode) != change.mode
            or (change.kind == "file" and ours.st_size != change.size)
        ):
            return [], []
        if stat.S_ISDIR(ours.st_mode):
            if real is None:
                os.mkdir(name, change.mode, dir_fd=dst_dir)
                # Its attributes as the job sees them, and the project's own overlay attributes it carries (a
                # directory renamed or copied with ``cp -a``): data, as a plain call's tree lands them.
                set_seen(at(dst_dir, name), seen(at(src_dir, name)), ())
                if land(at(dst_dir, name), carried_by(at(src_dir, name), run.carried), inherited=default_acl(dst_dir)):
                    run.marked.append(absolute)  # (the ACL a new directory inherits is its own: red team 7 F3)
                placed = lstat_at(name, dst_dir)
                if placed is not None:
                    run.baseline[absolute] = placed.st_ctime_ns  # the job's own, as this look left it
                    run.baseline[MADE + absolute] = placed.st_ctime_ns
                return [Applied(absolute, "create", "dir", after=identity(placed) if placed else ())], []
            if not stat.S_ISDIR(real.st_mode):
                raise Changed("a file is there, where the job made a directory")
            return [], []
        if real is None and (change.action == "modify" or left is not None):
            raise Changed("it was deleted meanwhile")
        if real is not None:
            if stat.S_ISDIR(real.st_mode):
                raise Changed("a directory is there")
            if change.action == "create" and left is None:
                raise Changed("it was created meanwhile")
            if (kept_now := kept_already(history, op.entry, real, dst_dir, name)) is None:
                run.unchanged(dst_dir, name, real, absolute)
            else:
                real = kept_now
        temp = copy_beside(src_dir, name, ours, dst_dir, f".mcp-guard-{op.entry}.tmp")
        if temp is None:
            return [], []  # still being written: the next look takes it
        copied = lstat_at(temp, dst_dir)
        if real is not None and copied is not None:
            thin_like((dst_dir, temp), copied, (dst_dir, name), real)
        try:
            # The project's own overlay attributes the job's file keeps or carried (stored escaped in its copy, which
            # the temporary copy does not hold): landed as data.
            kept = (*kept_own(change, real, dst_dir, src_dir, name), *carried_by(at(src_dir, name), run.carried))
            if not stat.S_ISLNK(ours.st_mode):
                set_seen(at(dst_dir, temp), seen(at(src_dir, name)), ())
                if land(at(dst_dir, temp), kept, run.carried, inherited=None if real else default_acl(dst_dir)):
                    run.marked.append(absolute)
            before = ""
            if real is not None:
                with held(dst_dir, name, real):
                    before = history.keep(dst_dir, name, absolute, run.audit_id, move=False, entry_id=op.entry,
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
            run.baseline[absolute] = placed.st_ctime_ns
            if real is None:
                run.baseline[MADE + absolute] = placed.st_ctime_ns  # made by a look: gone from the copy, the job's
        after = identity(placed) if placed is not None else ()
        shown = left_as(dst_dir, name, placed if change.kind == "file" else None)  # (while ``dst_dir`` is open)
    return [Applied(absolute, "modify" if before else "create", change.kind, before=before, after=after,
                    **shown)], []  # fmt: skip


def verb(kind: str) -> str:
    return {
        "delete": "deleted", "meta": "changed", "remove": "removed", "restore": "restored", "swap": "restored",
        "unmove": "moved back", "unmeta": "changed back", "move": "moved", "link": "linked", "adopt": "linked",
    }.get(kind, "applied")  # fmt: skip


APPLY_STEPS = {"meta": _meta, "move": _move, "link": _link, "delete": _delete, "times": _times}
