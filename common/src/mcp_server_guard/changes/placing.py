"""Placing what a command made: a file, symlink, FIFO or whole directory tree of the command's, renamed from its
upper layer into the real tree (the ``tree`` and ``place`` steps of an apply, run by ``changes.apply``).

Nothing is copied that can be renamed: one ``rename`` lands a new file or a whole new tree; what it replaces goes to
the history store under the call's audit id first. A tree whose directory appeared meanwhile is merged entry by
entry (at most ``MERGE_ENTRIES``); a path someone changed since the command started is a conflict, and the
command's version goes beside it (``<name>.mcp-guard-<auditId>``): nothing of the real tree is overwritten. What
lands carries none of overlayfs's bookkeeping (``changes.xattrs``). The other steps are ``changes.steps``'s.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import stat

from mcp_server_guard import faults
from mcp_server_guard.changes.changeset import Change, walk_real
from mcp_server_guard.changes.nofollow import (
    DIR,
    Changed,
    beside_name,
    free_name_beside,
    held,
    identity,
    lstat_at,
    parent,
    rename_at,
    thin_copy_up,
    thin_like,
)
from mcp_server_guard.changes.plan import Applied, Conflict, Op, left_as
from mcp_server_guard.changes.run import Run
from mcp_server_guard.changes.steps import (
    change_of,
    held_stat,
    kept,
    kept_already,
    kept_away,
    kept_group,
    kept_own,
    set_aside_before,
)
from mcp_server_guard.changes.xattrs import Xattrs, at, attribute_names, default_acl, land
from mcp_server_guard.files.history import HistoryStore
from mcp_server_guard.files.kept import file_kind
from mcp_server_guard.files.trees import open_own_dir, own_dirs_as_found

__all__ = ["MERGE_ENTRIES", "place"]


def _land_tree(dirfd: int, name: str, absolute: str, op: Op, run: Run, inherited: bytes | None = None) -> None:
    """A tree of the command's made ready for the real tree (``xattrs.land``) before it moves: its top, and the
    entries in it the reader found carrying attributes to take away (``op.marked``; the rest have none)."""
    if _land(dirfd, name, run, (), inherited):
        run.marked.append(absolute)
    # (Below a directory the command left with no permission for its owner, ``chmod 000 d``: let in, and left as
    # found before the tree moves — red team 63 F1.)
    with own_dirs_as_found():
        for path in op.marked:
            inner = f"{name}/{path[len(op.path) + 1 :]}"
            for attempt in range(2):
                try:
                    with parent(dirfd, inner) as (inner_dir, last):
                        _land_entry(inner_dir, last, run, inherited, posixpath.join(absolute, inner.partition("/")[2]))
                    break
                except (Changed, OSError):
                    if attempt == 0:
                        _let_in(dirfd, inner.rpartition("/")[0])


def _land_entry(dirfd: int, name: str, run: Run, inherited: bytes | None, absolute: str) -> None:
    _unshared_symlink(dirfd, name)
    if _COPIED_UP & set(attribute_names(dirfd, name)) and (st := lstat_at(name, dirfd)) is not None:
        thin_copy_up((dirfd, name), st)  # (a sparse project file the command moved into the tree)
    if _land(dirfd, name, run, (), inherited):
        run.marked.append(absolute)


def _let_in(dirfd: int, rel: str) -> None:
    """Each directory on the way to ``rel`` below ``dirfd`` (the command's copy, this user's) opened as ours: one
    with no permission let in for the scope (``trees.own_dirs_as_found``)."""
    fd = os.dup(dirfd)
    try:
        for part in [p for p in rel.split("/") if p]:
            nxt = open_own_dir(part, fd)
            os.close(fd)
            fd = nxt
    except OSError:
        pass
    finally:
        os.close(fd)


_COPIED_UP = {"user.overlay.origin", "trusted.overlay.origin"}  # overlayfs's mark on a copy-up of a real file


def _land(dirfd: int, name: str, run: Run, keep: Xattrs, inherited: bytes | None) -> bool:
    """``xattrs.land`` once per inode: another name of one landed already (``ln d/m m2 && mv d d2``) carries the
    project's own attributes under their real names by now, which landing it again would take away."""
    st = lstat_at(name, dirfd)
    if st is not None and not stat.S_ISDIR(st.st_mode) and st.st_nlink > 1:
        if (st.st_dev, st.st_ino) in run.landed:
            return any(n.startswith("user.overlay.") for n in attribute_names(dirfd, name))  # the escapes see it
        run.landed.add((st.st_dev, st.st_ino))
    return land(at(dirfd, name), keep, run.carried, inherited=inherited)


def _unshared_symlink(dirfd: int, name: str) -> None:
    """A symlink of the command's tree that is also a name of another entry of the copy (``ln link n/l2``: GNU ``ln``
    links the symlink itself) is made a symlink of its own before the tree lands: else taking the copy away after
    the call changes its ctime, and undo would take that for a later change."""
    st = lstat_at(name, dirfd)
    if st is None or not stat.S_ISLNK(st.st_mode) or st.st_nlink < 2:
        return
    temp = f".{name[:64]}.mcp-guard-ln.tmp"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temp, dir_fd=dirfd)
    os.symlink(os.readlink(name, dir_fd=dirfd), temp, dir_fd=dirfd)
    os.utime(temp, ns=(st.st_atime_ns, st.st_mtime_ns), dir_fd=dirfd, follow_symlinks=False)
    os.rename(temp, name, src_dir_fd=dirfd, dst_dir_fd=dirfd)


def place(
    history: HistoryStore, op: Op, root: int, upper: int, run: Run, absolute: str
) -> tuple[list[Applied], list[Conflict]]:
    """A file, symlink, FIFO or whole directory tree of the command's, into the real tree."""
    change = change_of(op)
    left = run.baseline.get(absolute)
    with contextlib.ExitStack() as stack:
        src_dir, name = stack.enter_context(parent(upper, op.path))
        ours = lstat_at(name, src_dir)
        dst_dir, _ = stack.enter_context(parent(root, op.path))
        if ours is None:
            # Placed before a crash: nothing but this step takes an entry out of a dead command's copy.
            return _placed_before(history, op, change, dst_dir, name, run, absolute) if run.replay else ([], [])
        real = lstat_at(name, dst_dir)
        tree = stat.S_ISDIR(ours.st_mode)
        aside_before = real is not None and set_aside_before(history, op, run, dst_dir)  # (then: someone's since)
        if (real is None or aside_before) and run.replay and (was := kept(history, op.entry, dst_dir)):
            # What was there went into the history before a crash (a file replaced by a directory, or the reverse):
            # the rest of the step is to do.
            group = kept_group(history, op.entry, was)  # (the file it was: an undo makes it one with its names)
            stays = posixpath.join(op.root, change.stays) if change.stays else ""
            try:
                rename_at(src_dir, name, dst_dir, name, noreplace=True)
            except FileExistsError:  # (made by someone else since: the command's version goes beside theirs)
                record = Applied(absolute, "delete", "dir" if stat.S_ISDIR(was.st_mode) else file_kind(was.st_mode),
                                 before=op.entry, tree=stat.S_ISDIR(was.st_mode), group=group, stays=stays)  # fmt: skip
                records, conflicts = _aside(src_dir, name, dst_dir, absolute, run.audit_id, "it was created meanwhile",
                                            tree)  # fmt: skip
                return [record, *records], conflicts
            if len(group) == 2:
                run.ours.add((group[0], group[1]))  # its other names' ctime moved with the step: ours (as _delete)
            done = _placed(absolute, change, dst_dir, name, op.entry, tree, group, stays)
            run.placed[absolute] = (done.after[0], done.after[1]) if done.after else (0, 0)
            return [done], []
        replacing = real is not None and (change.opaque or stat.S_ISDIR(real.st_mode) != tree)

        def aside(why: str) -> tuple[list[Applied], list[Conflict]]:
            run.failed.add(absolute)
            return _aside(src_dir, name, dst_dir, absolute, run.audit_id, why, tree)

        # A new entry takes its directory's default ACL; so does one that replaces what was there (a new inode
        # natively too: ``rm d/f && mkdir d/f``, red team 71 F1).
        inherited = default_acl(dst_dir) if real is None or replacing else None
        if tree:
            _land_tree(src_dir, name, absolute, op, run, inherited)
        else:
            keep = kept_own(change, real, dst_dir, src_dir, name)
            if _land(src_dir, name, run, keep, inherited):
                run.marked.append(absolute)
        if real is None:
            if change.action == "modify" or change.gone or left is not None:
                return aside("it was deleted meanwhile")
            if change.origin and not tree:
                thin_copy_up((src_dir, name), ours)  # (a sparse project file the command renamed: red team 61 F2)
            try:
                rename_at(src_dir, name, dst_dir, name, noreplace=True)
            except FileExistsError:
                return aside("it was created meanwhile")
            done = _placed(absolute, change, dst_dir, name, "", tree)
            run.placed[absolute] = (done.after[0], done.after[1]) if done.after else (0, 0)
            return [done], []
        if tree and not replacing:
            if _entries_over(src_dir, name, MERGE_ENTRIES):
                # Threat: a record of one line per merged entry, more than the history was reckoned for (the
                # call's record counts at most MERGE_ENTRIES lines for a new tree): a larger one goes beside.
                return aside("it was created meanwhile")
            return _merge(src_dir, name, dst_dir, absolute, run.audit_id)
        if change.action == "create" and not replacing and left is None:
            return aside("it was created meanwhile")
        try:
            if (kept_now := kept_already(history, op.entry, real, dst_dir, name)) is None:
                counted = run.unchanged(dst_dir, name, real, absolute)
            else:
                real, counted = kept_now, (0, 0)  # kept into the history before a crash (its ctime moved): ours
            thin_like((src_dir, name), ours, (dst_dir, name), real)
            with held(dst_dir, name, real) as fd:
                entry = history.keep(
                    dst_dir, name, absolute, run.audit_id, move=replacing, entry_id=op.entry, durable=False,
                    tree=counted, links=run.tree_links.get(absolute),
                )  # fmt: skip
                faults.point(f"place {absolute}")
                try:
                    rename_at(src_dir, name, dst_dir, name, noreplace=replacing)
                except FileExistsError:
                    # Threat: a name made by someone else while what was there was kept (set aside and copied into
                    # a history on another file system: seconds): what was there is deleted as the command did (and
                    # recorded: an undo brings it back), the command's version goes beside theirs (red team 57 F3).
                    records, conflicts = aside("it was created meanwhile")
                    return [kept_away(absolute, real, entry.id), *records], conflicts
                run.named(real, held_stat(fd))
        except Changed as exc:
            return aside(str(exc))
        group = (real.st_dev, real.st_ino) if stat.S_ISREG(real.st_mode) else ()
        stays = posixpath.join(op.root, change.stays) if change.stays else ""
        done = _placed(absolute, change, dst_dir, name, entry.id, tree, group, stays)
        run.placed[absolute] = (done.after[0], done.after[1]) if done.after else (0, 0)
        return [done], []


def _placed_before(
    history: HistoryStore, op: Op, change: Change, dst_dir: int, name: str, run: Run, absolute: str
) -> tuple[list[Applied], list[Conflict]]:
    """A place step a crash cut after its rename: recorded as it would have been (beside what is there, when it
    was set aside)."""
    beside = beside_name(name, run.audit_id)
    aside = lstat_at(beside, dst_dir)
    if aside is not None:
        where = posixpath.join(posixpath.dirname(absolute), beside)
        record = Applied(where, "create", "dir" if stat.S_ISDIR(aside.st_mode) else "file", after=identity(aside),
                         tree=stat.S_ISDIR(aside.st_mode))  # fmt: skip
        return [record], [Conflict(absolute, f"it changed meanwhile: the command's version is beside it, as {beside}")]
    real = lstat_at(name, dst_dir)
    if real is None:
        return [], []
    before = kept(history, op.entry)
    group = kept_group(history, op.entry, before)
    if len(group) == 2:
        run.ours.add((group[0], group[1]))  # its other names' ctime changed with this step's rename: ours
    stays = posixpath.join(op.root, change.stays) if change.stays else ""
    done = _placed(absolute, change, dst_dir, name, op.entry if before is not None else "", stat.S_ISDIR(real.st_mode),
                   group, stays)  # fmt: skip
    run.placed[absolute] = (real.st_dev, real.st_ino)
    return [done], []


def _placed(
    absolute: str,
    change: Change,
    dirfd: int,
    name: str,
    before: str,
    tree: bool,
    group: tuple[int, ...] = (),
    stays: str = "",
) -> Applied:
    placed = lstat_at(name, dirfd)
    after = identity(placed) if placed is not None else ()
    return Applied(absolute, "modify" if before else "create", change.kind, before=before, after=after, tree=tree,
                   group=group, stays=stays, **left_as(dirfd, name, placed))  # fmt: skip


MERGE_ENTRIES = 256  # entries of a new tree merged one by one into a directory made meanwhile, at most


@own_dirs_as_found()
def _entries_over(dirfd: int, name: str, most: int) -> bool:
    """Whether the directory ``name`` holds more than ``most`` entries (at any depth; no link followed)."""
    fd = os.open(name, DIR | os.O_NOFOLLOW, dir_fd=dirfd)
    budget = [most]
    try:
        for _entry in walk_real(fd, "", budget, ours=True):
            pass
    finally:
        os.close(fd)
    return budget[0] < 0


def _merge(src_dir: int, name: str, dst_dir: int, absolute: str, audit_id: str) -> tuple[list[Applied], list[Conflict]]:
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
                more, clashes = _merge(src, child, dst, path, audit_id)
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
