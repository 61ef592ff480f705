"""Each step of an undo, against the real tree: what a call made moved away (``remove``), what it deleted brought
back (``restore``), what it replaced brought back in place of what is there (``swap``), a rename reverted
(``unmove``), metadata reverted (``unmeta``), a directory's time put back (``untimes``). What a step takes away
goes to the history store under the undo's audit id first (an undo can itself be undone). Names of one inode come
back as one: an undo that restores one of them makes the others new names of it — of a name that is still that
inode, only if it still holds the bytes kept (an inode number can be another file's by now). Every path is reached
through ``changes.nofollow``, no link followed. An apply's steps are ``changes.steps``'s; the run ``changes.apply``'s.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import stat
from collections.abc import Sequence

from mcp_server_guard.changes import name_changes
from mcp_server_guard.changes.changeset import same_bytes, walk_real
from mcp_server_guard.changes.nofollow import (
    DIR,
    Changed,
    held,
    identity,
    lstat_at,
    lstat_beneath,
    missing_parent,
    now_ns,
    parent,
    rename_at,
    set_meta,
    unchanged,
    unchanged_tree,
)
from mcp_server_guard.changes.plan import NO_TIME, Applied, Op, changed_since, left_as
from mcp_server_guard.changes.run import Run
from mcp_server_guard.changes.steps import (
    half_set,
    kept,
    kept_away,
    kept_from,
    kept_group,
    made_again_since,
    set_aside_before,
    taken_back,
)
from mcp_server_guard.changes.xattrs import at, seen_as
from mcp_server_guard.files.copying import WrittenMeanwhile, open_to_read
from mcp_server_guard.files.history import HistoryError, HistoryStore
from mcp_server_guard.files.kept import file_kind, kept_kind
from mcp_server_guard.files.reading import sha256_at
from mcp_server_guard.files.trees import as_found, open_own_dir, own_dirs_as_found, set_dir_time

__all__ = ["UNDO_STEPS", "as_left", "names_in", "names_in_roots", "root_of"]


def _record(op: Op) -> Applied:
    assert op.record is not None, op
    return op.record


def _remove(history: HistoryStore, op: Op, root: int, run: Run, absolute: str) -> list[Applied]:
    """Undo a creation: what is there goes to the history (a file with other names says which stays, for an undo of
    this undo to make it one with that again)."""
    with parent(root, op.path) as (dirfd, name):
        real = lstat_at(name, dirfd)
        if real is None or set_aside_before(history, op, run, dirfd):
            before = kept(history, op.entry, dirfd) if run.replay else None
            if before is None:
                return []
            # Moved into the history before a crash: recorded as it was done.
            directory = stat.S_ISDIR(before.st_mode)
            group = kept_group(history, op.entry, before)
            return [Applied(absolute, "delete", "dir" if directory else file_kind(before.st_mode), before=op.entry,
                            tree=directory, group=group, stays=run.stays(group, absolute))]  # fmt: skip
        staying = run.stays(real, absolute)
        linked: list[tuple[str, int, int]] = []
        counted = unchanged(dirfd, name, real, now_ns() + 1, linked=linked) if stat.S_ISDIR(real.st_mode) else (0, 0)
        with held(dirfd, name, real):
            entry = history.keep(dirfd, name, absolute, run.audit_id, move=True, entry_id=op.entry, durable=False,
                                 tree=counted, links=linked or None)  # fmt: skip
    return [kept_away(absolute, real, entry.id, staying)]


def _bring_back(
    history: HistoryStore,
    op: Op,
    root: int,
    dirfd: int,
    name: str,
    run: Run,
    *,
    replace: bool,
    absolute: str,
    over: os.stat_result | None = None,
) -> str:
    """Put a pre-image back at ``name``: as another name of an inode of the same group this undo restored already,
    or of the name that stayed with it (if it still is that inode); else out of the history (``over``: the file it
    replaces, as looked at with its lock held: a write since is a change, ``HistoryStore.take``). Returns what it
    was ("file", "dir", ...)."""
    record = _record(op)
    anchors: list[tuple[str, tuple[int, ...], str]] = []  # (name, the inode it must be, the entry it must hold)
    if record.group:
        if record.group in run.restored:
            path, holds = run.restored[record.group]
            anchors.append((path, holds, ""))  # restored by this undo: it is the pre-image
        # A name that held the very inode when the undo was planned (another record's, or one that stayed): only
        # if it still holds the bytes kept (an inode number can be another file's by now).
        anchors += [(p, record.group, record.before) for p in run.names.get((record.group[0], record.group[1]), [])]
        if record.stays:
            anchors.append((record.stays, record.group, record.before))
    for anchor, holds, entry_kept in anchors:
        inside = anchor.startswith(op.root.rstrip("/") + "/") and anchor != absolute
        rel = posixpath.relpath(anchor, op.root)
        if inside and _linked(
            root, rel, holds, dirfd, name, replace=replace, run_id=run.audit_id, history=history, kept=entry_kept
        ):
            if tuple(holds) != tuple(record.group):
                run.copies.setdefault(record.group, []).append(absolute)  # a name of a copy, like its anchor
            elif record.group not in run.restored and (placed := lstat_at(name, dirfd)) is not None:
                # Back as a name of the file another name still held (``n8/f``, a tree this undo takes away next):
                # the other names this undo puts back are made names of this one.
                run.restored[record.group] = (absolute, (placed.st_dev, placed.st_ino))
            return "file"
    # A tree whose files had other names keeps its record until they are names of them again (a crash in between:
    # the step finished after it finds them in the record still).
    relinks = history.tree_links(record.before)
    tree = lstat_beneath(str(history.directory), f"{record.before}.tree") if run.groups else None  # (_rejoin's)
    entry = history.take(record.before, dirfd, name, replace=replace, forget=not relinks, over=over)
    placed = lstat_at(name, dirfd)
    if record.group and placed is not None:
        run.restored[record.group] = (absolute, (placed.st_dev, placed.st_ino))
        run.copies[record.group] = [absolute]
    if relinks:
        _relink(relinks, op, root, run, absolute)
        run.forget_later.append(record.before)
    same = tree is not None and placed is not None and (tree.st_dev, tree.st_ino) == (placed.st_dev, placed.st_ino)
    if entry.kind == "tree" and run.groups and same:
        # (Its files are the inodes they were only where the tree came back whole by a rename: a tree copied back
        # from a history on another file system holds new inodes, whose numbers may be a group's by chance — red
        # team 56 F5: a file restored there was taken for one of another record's group and linked to it.)
        _rejoin(op, root, dirfd, name, run, absolute)
    return "dir" if entry.kind == "tree" else entry.kind


_NAMES_WALKED = 50_000  # paths of a root walked at most to find the other names of a tree's files


def _relink(links: list[tuple[str, int, int]], op: Op, root: int, run: Run, absolute: str) -> None:
    """Files of a tree just put back that had other names when it was kept (kept as copies: ``unshare``): each is
    made a name of that file again where a name of it still holds the same bytes and mode (one this undo put back,
    or one that stayed); else it stays the copy, the bytes it had. Its directory keeps its time."""
    tree = posixpath.relpath(absolute, op.root)
    names: dict[tuple[int, int], list[str]] | None = None
    for rel, dev, ino in links:
        group = (dev, ino)
        member = posixpath.join(tree, rel)
        anchors: list[tuple[str, tuple[int, ...]]] = []
        if group in run.restored:
            anchors.append(run.restored[group])
        else:
            if names is None:
                names = names_in(root, {(d, i) for _rel, d, i in links}, tree)
            anchors += [(posixpath.join(op.root, path), group) for path in names.get(group, [])]
        with contextlib.suppress(Changed, OSError), parent(root, member) as (member_dir, member_name):
            mine = lstat_at(member_name, member_dir)
            if mine is None or not stat.S_ISREG(mine.st_mode):
                continue
            above = os.fstat(member_dir)
            joined = False
            for anchor, holds in anchors:
                anchor_rel = posixpath.relpath(anchor, op.root)
                if _same_file_as(root, anchor_rel, member_dir, member_name, mine) and _linked(
                    root, anchor_rel, holds, member_dir, member_name, replace=True, run_id=run.audit_id
                ):
                    os.utime(member_dir, ns=(above.st_atime_ns, above.st_mtime_ns))
                    run.restored.setdefault(group, (posixpath.join(absolute, rel), holds))
                    joined = True
                    break
            if not joined:  # a later record of the same file is made a name of this copy
                run.restored.setdefault(group, (posixpath.join(absolute, rel), (mine.st_dev, mine.st_ino)))


def names_in(root: int, inodes: set[tuple[int, int]], skip: str = "") -> dict[tuple[int, int], list[str]]:
    """The names of files ``inodes`` in the root (outside ``skip``), at most _NAMES_WALKED paths looked at."""
    found: dict[tuple[int, int], list[str]] = {}
    with own_dirs_as_found(name_changes.note):  # (a directory of the user's with no permission looked into too)
        for path, st in walk_real(root, "", [_NAMES_WALKED]):
            if (
                (st.st_dev, st.st_ino) in inodes
                and stat.S_ISREG(st.st_mode)
                and not (path == skip or path.startswith(skip + "/"))
            ):
                found.setdefault((st.st_dev, st.st_ino), []).append(path)
    return found


def names_in_roots(
    names: dict[tuple[int, int], list[str]], wanted: set[tuple[int, int]], roots: Sequence[str], near: Sequence[str]
) -> None:
    """Add to ``names`` (absolute paths by inode) the names of files ``wanted``: in the directories ``near`` first
    (absolute: those of the records' paths), then, unless every such file has as many names as it has links, in the
    whole of each root (bounded: names_in)."""

    def add(group: tuple[int, int], path: str) -> None:
        have = names.setdefault(group, [])
        if path not in have:
            have.append(path)

    for directory in dict.fromkeys(near):
        root = root_of(directory, roots)
        if root is None:
            continue
        rel = posixpath.relpath(directory, root)
        with contextlib.suppress(OSError, Changed):
            fd = os.open(root, DIR)
            try:
                with parent(fd, f"{rel}/.") as (dirfd, _name):
                    for name in os.listdir(dirfd):
                        st = lstat_at(name, dirfd)
                        if st is not None and stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) in wanted:
                            add((st.st_dev, st.st_ino), posixpath.join(directory, name))
            finally:
                os.close(fd)
    if all(_all_names(names.get(group, []), roots) for group in wanted):
        return
    for root in roots:
        try:
            fd = os.open(root, DIR)
        except OSError:
            continue
        try:
            with contextlib.suppress(OSError, ValueError):  # a tree too deep to walk: those names are not known
                for group, found in names_in(fd, wanted).items():
                    for rel in found:
                        add(group, posixpath.join(root, rel))
        finally:
            os.close(fd)


def root_of(path: str, roots: Sequence[str]) -> str | None:
    """The innermost of ``roots`` that ``path`` (absolute) lies in, or None."""
    best = None
    for root in roots:
        if (path == root or path.startswith(root.rstrip("/") + "/")) and (best is None or len(root) > len(best)):
            best = root
    return best


def _all_names(paths: list[str], roots: Sequence[str]) -> bool:
    """Whether ``paths`` (names of one file) are as many as the file has links (read beneath its root)."""
    root = root_of(paths[0], roots) if paths else None
    st = lstat_beneath(root, posixpath.relpath(paths[0], root)) if root is not None else None
    return st is not None and len(paths) >= st.st_nlink


def _same_file_as(root: int, rel: str, dirfd: int, name: str, mine: os.stat_result) -> bool:
    """Whether the file at ``rel`` holds what ``name`` in ``dirfd`` holds: bytes and mode."""
    with contextlib.suppress(Changed, OSError), parent(root, rel) as (other_dir, other_name):
        other = lstat_at(other_name, other_dir)
        return (
            other is not None
            and stat.S_ISREG(other.st_mode)
            and stat.S_IMODE(other.st_mode) == stat.S_IMODE(mine.st_mode)
            and other.st_size == mine.st_size
            and same_bytes(other_dir, other_name, dirfd, name, mine.st_size, as_owner=True)
        )
    return False


def _rejoin(op: Op, root: int, dirfd: int, name: str, run: Run, absolute: str) -> None:
    """Files in a tree just restored that another record restores too (names of one inode): a name restored before
    from a copy becomes one with them again; one restored later is linked to them."""
    fd = open_own_dir(name, dirfd, real=0o500)  # (a tree holding one with no permission too: red team 67 F6)
    try:
        for rel, st in walk_real(fd, "", [1 << 20]):
            group = (st.st_dev, st.st_ino)
            if not stat.S_ISREG(st.st_mode) or group not in run.groups:
                continue
            inside = posixpath.join(absolute, rel)
            for copied in run.copies.pop(group, []):
                if not copied.startswith(op.root.rstrip("/") + "/"):
                    continue
                with (
                    contextlib.suppress(Changed, OSError),
                    parent(root, posixpath.relpath(copied, op.root)) as (at_dir, at_name),
                ):
                    _linked(
                        root,
                        posixpath.relpath(inside, op.root),
                        group,
                        at_dir,
                        at_name,
                        replace=True,
                        run_id=run.audit_id,
                    )
            run.restored[group] = (inside, group)
    finally:
        os.close(fd)


def _linked(
    root: int,
    rel: str,
    group: tuple[int, ...],
    dirfd: int,
    name: str,
    *,
    replace: bool,
    run_id: str,
    history: HistoryStore | None = None,
    kept: str = "",
) -> bool:
    """Make ``name`` another name of the file at ``rel`` if that still is the inode ``group`` ((dev, ino); no link
    followed) and, with ``kept``, holds what that history entry kept."""
    try:
        with parent(root, rel) as (src_dir, src_name):
            st = lstat_at(src_name, src_dir)
            if st is None or not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != tuple(group)[:2]:
                return False
            if kept and history is not None:
                fd = open_to_read(src_dir, src_name, st)  # (a file its owner may not read too: red team 60 F2)
                try:
                    if not history.holds(kept, fd) or (os.fstat(fd).st_dev, os.fstat(fd).st_ino) != tuple(group)[:2]:
                        return False
                finally:
                    os.close(fd)
            # One name per run (its audit id), used one step at a time: a step a crash cut finds its own here.
            temp = f".mcp-guard-{run_id}.tmp"
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp, dir_fd=dirfd)
            now = lstat_at(name, dirfd)
            if now is not None and (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
                return True  # one file already (linked before a crash: renaming a name over itself does nothing)
            if not replace:
                os.link(src_name, name, src_dir_fd=src_dir, dst_dir_fd=dirfd, follow_symlinks=False)
                return True
            os.link(src_name, temp, src_dir_fd=src_dir, dst_dir_fd=dirfd, follow_symlinks=False)
    except (Changed, OSError):
        return False
    os.rename(temp, name, src_dir_fd=dirfd, dst_dir_fd=dirfd)
    return True


def _restore(history: HistoryStore, op: Op, root: int, run: Run, absolute: str) -> list[Applied]:
    """Undo a deletion: the kept pre-image comes back (its inode, or a copy; or a name of the inode it shared)."""
    with parent(root, op.path) as (dirfd, name):
        there = lstat_at(name, dirfd)
        if there is not None:
            relinks = history.tree_links(_record(op).before) if run.replay else []  # before taken() forgets them
            if not (run.replay and _back_already(history, _record(op), there)):
                raise Changed("something is there again")
            kind = "dir" if stat.S_ISDIR(there.st_mode) else file_kind(there.st_mode)  # put back before a crash
            if relinks and kind == "dir":
                _relink(relinks, op, root, run, absolute)  # a crash cut the step before its files were names again
            if kind == "dir":
                history.forget(_record(op).before)  # (a copy's: let go as ``take`` would have)
            run.put_back_before(_record(op).group, absolute, there)
        else:
            kind = _bring_back(history, op, root, dirfd, name, run, replace=False, absolute=absolute)
        placed = lstat_at(name, dirfd)
        shown = left_as(dirfd, name, placed)  # (a redo's check that nobody changed it since: red team 95 F2)
    return [Applied(absolute, "create", kind, after=identity(placed) if placed is not None else (),
                    tree=kind == "dir", **shown)]  # fmt: skip


def _swap(history: HistoryStore, op: Op, root: int, run: Run, absolute: str) -> list[Applied]:
    """Undo a replacement: what is there now goes to the history, the pre-image takes its name (one rename, when
    both are files)."""
    record = _record(op)
    relinks = history.tree_links(record.before) if run.replay else []  # before _swapped_before() forgets them
    if beside := made_again_since(history, op, run, root):
        raise Changed(f"it was made again since: what the call left there is beside it, as {beside}")
    if run.replay and _swapped_before(history, op, root, record):
        # Put back before a crash (what was there is kept under this step's entry): recorded as it was done.
        with parent(root, op.path) as (dirfd, name):
            placed = lstat_at(name, dirfd)
            now = kept(history, op.entry)
            shown = left_as(dirfd, name, placed)
        if placed is None or now is None:
            raise Changed("it is gone")
        directory = stat.S_ISDIR(placed.st_mode)
        if relinks and directory:
            _relink(relinks, op, root, run, absolute)  # a crash cut the step before its files were names again
        run.put_back_before(record.group, absolute, placed)
        group = kept_group(history, op.entry, now)
        return [Applied(absolute, "modify", "dir" if directory else file_kind(placed.st_mode), before=op.entry,
                        after=identity(placed), tree=directory, group=group,
                        stays=run.stays(group, absolute), **shown)]  # fmt: skip
    before_kind = history.kind(record.before)
    with parent(root, op.path) as (dirfd, name):
        real = lstat_at(name, dirfd)
        if real is None:
            now = kept(history, op.entry, dirfd) if run.replay else None
            if now is None:
                raise Changed("it is gone")
            # What was there went into the history before a crash: the pre-image comes back.
            kind = _bring_back(history, op, root, dirfd, name, run, replace=False, absolute=absolute)
            placed = lstat_at(name, dirfd)
            group = kept_group(history, op.entry, now)
            return [Applied(absolute, "modify", kind, before=op.entry, tree=kind == "dir",
                            after=identity(placed) if placed is not None else (), group=group,
                            stays=run.stays(group, absolute), **left_as(dirfd, name, placed))]  # fmt: skip
        files = not stat.S_ISDIR(real.st_mode) and before_kind != "tree"
        staying = run.stays(real, absolute)
        # A tree kept whole keeps its files with a name outside it as copies, as a deletion's does (the redo makes
        # each a name of that file again: ``_relink``).
        linked: list[tuple[str, int, int]] = []
        counted = unchanged(dirfd, name, real, now_ns() + 1, linked=linked) if stat.S_ISDIR(real.st_mode) else (0, 0)
        with held(dirfd, name, real) as fd:
            entry = history.keep(dirfd, name, absolute, run.audit_id, move=not files, entry_id=op.entry,
                                 durable=False, tree=counted, links=linked or None)  # fmt: skip
            # (The file as the lock found it, and as the keep left it — its ctime moved by a copy of one its owner
            # may not read, red team 62 F5 — for ``take``'s check that nobody wrote it since.)
            locked = os.fstat(fd) if fd is not None else None
            try:
                kind = _bring_back(history, op, root, dirfd, name, run, replace=files, absolute=absolute,
                                   over=locked)  # fmt: skip
            except (Changed, OSError, WrittenMeanwhile) as exc:
                why = str(exc) if not isinstance(exc, OSError) else exc.strerror or str(exc)
                if files:  # (what is there stays: its copy in the history is let go)
                    history.forget(entry.id)
                    raise Changed(why) from None
                # What was there went into the history, and the pre-image could not take its place (a name made
                # meanwhile): it comes back out, where it was or beside what is there now (red team 57 F4: lost).
                if beside := taken_back(history, entry.id, dirfd, name, run.audit_id):
                    why = f"{why}: what the call left there is beside it, as {beside}"
                raise Changed(why) from None
        placed = lstat_at(name, dirfd)
        shown = left_as(dirfd, name, placed)
    group = (real.st_dev, real.st_ino) if stat.S_ISREG(real.st_mode) else ()
    return [Applied(absolute, "modify", kind, before=entry.id, after=identity(placed) if placed is not None else (),
                    group=group, tree=kind == "dir", stays=staying, **shown)]  # fmt: skip


def _swapped_before(history: HistoryStore, op: Op, root: int, record: Applied) -> bool:
    """Whether a crash cut this swap after the pre-image came back: taken out of the history, or linked to a name
    that holds it (what was there is kept under the step's entry, and something else is there now): another inode,
    one of another kind than what was kept, or anything where a tree was kept (a tree is moved away at once) — a
    copy from a history on another file system may take the number of what the keep removed (red team 61 F4)."""
    if history.taken(record.before):
        return True
    now = kept(history, op.entry)
    if now is None:
        return False
    was = kept_from(history, op.entry) or (now.st_dev, now.st_ino)
    with parent(root, op.path) as (dirfd, name):
        placed = lstat_at(name, dirfd)
    what = history.kind(op.entry)
    return placed is not None and (
        (placed.st_dev, placed.st_ino) != tuple(was)[:2] or what == "tree" or kept_kind(placed.st_mode) != what
    )


def _unmove(history: HistoryStore, op: Op, root: int, run: Run, absolute: str) -> list[Applied]:
    """Undo a rename: the file goes back to its old name."""
    record = _record(op)
    back = posixpath.relpath(record.moved_from, op.root)
    with parent(root, op.path) as (src_dir, src_name), parent(root, back) as (dst_dir, name):
        real = lstat_at(src_name, src_dir)
        there = lstat_at(name, dst_dir)
        if real is None and run.replay and there is not None:
            return [Applied(record.moved_from, "create", "file", moved_from=absolute, after=identity(there))]
        if real is None:
            raise Changed("it is gone")
        if there is not None:
            raise Changed("something is at its old name again")
        rename_at(src_dir, src_name, dst_dir, name, noreplace=True)
        placed = lstat_at(name, dst_dir)
        shown = left_as(dst_dir, name, placed)
    return [Applied(record.moved_from, "create", "file", moved_from=absolute,
                    after=identity(placed) if placed else (), **shown)]  # fmt: skip


def _unmeta(history: HistoryStore, op: Op, root: int, run: Run, absolute: str) -> list[Applied]:
    record = _record(op)
    with parent(root, op.path) as (dirfd, name):
        real = lstat_at(name, dirfd)
        if real is None:
            raise Changed("it is gone")
        real = as_found(real)  # (its mode as it was, not as this undo let it in: red team 67 F2)
        have = seen_as(at(dirfd, name), record.xattrs, record.old_xattrs)
        with held(dirfd, name, real):
            set_meta(dirfd, name, real, record.old_mode, record.old_mtime_ns, record.old_xattrs, have)
        now = lstat_at(name, dirfd)
    old_mode, old_mtime = stat.S_IMODE(real.st_mode), real.st_mtime_ns
    if run.replay and half_set(real, have, record.old_mode, record.old_mtime_ns, record.old_xattrs, record.mode,
                               record.mtime_ns, record.xattrs):  # fmt: skip
        old_mode, old_mtime, have = record.mode, record.mtime_ns or old_mtime, record.xattrs  # a crash cut it half way
    return [Applied(absolute, "meta", record.kind, after=identity(now) if now is not None else (),
                    old_mode=old_mode, old_mtime_ns=old_mtime,
                    mode=record.old_mode, mtime_ns=record.old_mtime_ns, xattrs=record.old_xattrs,
                    old_xattrs=have)]  # fmt: skip


def _back_already(history: HistoryStore, record: Applied, there: os.stat_result) -> bool:
    """Whether what is at a path an undo restores is the pre-image, put back before a crash: taken out of the history
    (its data is gone), or — a name of a file restored through another — a file of the size and time kept."""
    if history.taken(record.before):
        return True
    with contextlib.suppress(HistoryError):
        entry = history.metadata(record.before)
        if stat.S_ISDIR(there.st_mode):
            # A tree copied back whole from a history on another file system (renamed into place with the times it
            # was kept with), its data not yet let go: red team 56 F5.
            return entry.kind == "tree" and there.st_mtime_ns == entry.mtime_ns
        return stat.S_ISREG(there.st_mode) and (there.st_size, there.st_mtime_ns) == (entry.size, entry.mtime_ns)
    return False


def _untimes(history: HistoryStore, op: Op, root: int, run: Run, absolute: str) -> list[Applied]:
    """A directory's modification time as it was before the call (``op.time``: that, and what it was when the undo
    was planned, before its own steps changed it)."""
    time = op.time
    assert time is not None
    with contextlib.suppress(Changed), parent(root, op.path) as (dirfd, name):  # gone with its tree: nothing to do
        real = lstat_at(name, dirfd)
        if real is not None and stat.S_ISDIR(real.st_mode) and time.mtime_ns != NO_TIME:
            set_dir_time(dirfd, name, real, time.mtime_ns)
    return [Applied(absolute, "times", "dir", old_mtime_ns=time.old_mtime_ns, mtime_ns=time.mtime_ns)]


UNDO_STEPS = {
    "remove": _remove, "restore": _restore, "swap": _swap, "unmove": _unmove, "unmeta": _unmeta,
    "untimes": _untimes,
}  # fmt: skip


def as_left(root: str, rel: str, record: Applied, applied_ns: int, copied: tuple[int, ...] = ()) -> bool:
    """Whether the path still is as the call left it (``copied``: a copy of what it left, put back by a later undo)."""
    if record.action == "times":
        return True  # a directory's time: put back whatever happened in it since
    try:
        root_fd = os.open(root, DIR)
    except OSError:
        return False
    try:
        with parent(root_fd, rel) as (dirfd, name):
            real = lstat_at(name, dirfd)
            if record.action == "delete":
                return real is None
            if real is None:
                return False
            real = as_found(real)  # (a directory of the user's with no permission, let in for this undo)
            moved = not stat.S_ISDIR(real.st_mode) and real.st_ctime_ns > applied_ns > 0  # (by content: rt171, 173)
            if record.action == "meta":
                if stat.S_ISDIR(real.st_mode) and not real.st_mode & stat.S_IRUSR:  # (attributes need u+r: rt67 F4)
                    os.close(open_own_dir(name, dirfd, real=0o500))
                if seen_as(at(dirfd, name), record.xattrs, record.old_xattrs) != record.xattrs:
                    return False
                if not stat.S_ISLNK(real.st_mode) and stat.S_IMODE(real.st_mode) != record.mode:
                    return False
                return stat.S_ISDIR(real.st_mode) or (identity(real) == record.after and not moved)
            if record.tree:
                try:
                    unchanged_tree(dirfd, name, applied_ns)
                except Changed:
                    return False
                return (real.st_dev, real.st_ino) == record.after[:2]
            if changed_since(dirfd, name, real, record):
                return False  # (a ``chmod 600`` after the call, silently put back to 0644 by an undo that said so)
            if identity(real) in (record.after, copied) and not moved:
                return True
            if stat.S_ISDIR(real.st_mode) and record.kind == "dir":  # a directory's size is its entries' room
                return (real.st_dev, real.st_ino, real.st_mtime_ns) == tuple(record.after[:3])
            return bool(record.sha256) and stat.S_ISREG(real.st_mode) and sha256_at(dirfd, name) == record.sha256
    except Changed:
        return record.action == "delete" and missing_parent(root_fd, rel)
    finally:
        os.close(root_fd)
