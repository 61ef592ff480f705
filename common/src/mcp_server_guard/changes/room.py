"""Whether what an apply or an undo keeps fits the history, reckoned before anything changes: a call never evicts
its own pre-images and never stops half way for want of room. What is reckoned is what the store measures, disk:
each pre-image's data and metadata, a kept tree's directories, and the record the run writes (what undo plays
back) line by line."""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import stat
from collections.abc import Sequence

from mcp_server_guard.changes.changeset import ChangeSet
from mcp_server_guard.changes.effects import Judgement
from mcp_server_guard.changes.nofollow import DIR, Changed, lstat_at, parent
from mcp_server_guard.changes.placing import MERGE_ENTRIES
from mcp_server_guard.changes.plan import Op
from mcp_server_guard.changes.what import What
from mcp_server_guard.changes.xattrs import Xattrs
from mcp_server_guard.files.calls import encoded_size
from mcp_server_guard.files.history import HistoryError, HistoryStore
from mcp_server_guard.files.kept import disk_usage

__all__ = ["apply_room", "kept", "undo_room"]

_DIR_BYTES = 4096  # what a directory a kept tree holds takes in the history (a block, on ext4 and most others)
_RECORD_LINE = 200  # bytes of a call record's line beside the paths it names (measured: ~70; kept generous)
_LINK_LINE = 48  # bytes of a kept tree's line for a file with several names, beside its path (device, inode)


def apply_room(
    history: HistoryStore,
    sets: Sequence[ChangeSet],
    skip: frozenset[tuple[str, str]],
    ops: Sequence[Op],
    what: What,
    audit_id: str = "",
) -> str:
    """Why the previous contents an apply of ``ops`` keeps do not fit the history ("" when they do). A call applied
    in parts (a job's looks) has one record: what its earlier parts wrote counts with this part's."""
    nbytes = copied = record = 0
    with contextlib.suppress(OSError, ValueError):
        record = (history.calls.directory / f"{audit_id}.json").stat().st_size if audit_id else 0
    keeps = {(op.root, op.path) for op in ops if op.entry and op.change is not None and
             (op.change.action in ("modify", "delete") or op.change.opaque)}  # fmt: skip
    store = os.stat(history.directory).st_dev if history.directory.exists() else -1
    for changes in sets:
        other = os.stat(changes.root).st_dev != store
        for change in changes.changes:
            if (changes.root, change.path) in skip:
                continue
            if change.names:
                # A file with several names in a tree kept whole: its entry lists it (path, device, inode).
                record += encoded_size(change.path) + _LINK_LINE
            size = change.size if change.action == "delete" else change.old_size if change.action == "modify" else 0
            size = _on_disk(changes.root, change.path, size) if size >= _SPARSE_LOOKED and not other else size
            size += _DIR_BYTES if change.action == "delete" and change.kind == "dir" else 0  # a kept tree's
            nbytes += size
            copied += size if other else 0
    # The call's record, reckoned as it is written: the call (its command text), and a line per step naming its
    # path (twice at most) and the attributes it sets and had (in hex) — so that a call of only new files, of names
    # not UTF-8 (six bytes each), of a long command or of large attributes cannot pass the bound either.
    record += len(json.dumps(what.json(), ensure_ascii=False).encode("utf-8", "backslashreplace")) + sum(
        2 * encoded_size(posixpath.join(op.root, op.path)) + _RECORD_LINE + _xattr_bytes(*_attributes(op)) for op in ops
    )
    # A new tree that finds a directory made meanwhile is merged entry by entry, a line each (at most
    # MERGE_ENTRIES: a larger one goes beside it whole, one line).
    for changes in sets:
        trees = {op.path for op in ops if op.kind == "tree" and op.root == changes.root}
        inside: dict[str, int] = {}
        for change in changes.changes:
            if change.top in trees and inside.get(change.top, 0) < MERGE_ENTRIES:
                inside[change.top] = inside.get(change.top, 0) + 1
                record += 2 * encoded_size(posixpath.join(changes.root, change.path)) + _RECORD_LINE
    return history.room(len(keeps), nbytes, copied=copied, record=record)


_SPARSE_LOOKED = 1 << 20  # files this large are looked at for what they take on disk (a sparse one takes less)


def _on_disk(root: str, path: str, size: int) -> int:
    """What the real file at ``path`` (``size`` bytes long) takes on disk, which its pre-image takes too (moved, or
    copied with its holes: a sparse disk image of 300 MiB holding 4 KiB of data is 4 KiB: red team 7 F2); ``size``
    where it cannot be told. Looked at beneath the root, never through a link."""
    try:
        fd = os.open(root, DIR)
    except OSError:
        return size
    try:
        with contextlib.suppress(Changed, OSError), parent(fd, path) as (dirfd, name):
            st = lstat_at(name, dirfd)
            if st is not None and stat.S_ISREG(st.st_mode) and st.st_size == size:
                return min(size, disk_usage(st))
    finally:
        os.close(fd)
    return size


def kept(sets: Sequence[ChangeSet], judgement: Judgement) -> tuple[int, int]:
    """About how many pre-images, of how many bytes, an apply of ``sets`` as judged keeps (before its steps are
    planned: for ``HistoryStore.evicting``)."""
    count = nbytes = 0
    for changes in sets:
        for change in changes.changes:
            if change.action in ("modify", "delete") and (changes.root, change.path) not in judgement.refused:
                count += 1
                nbytes += change.size if change.action == "delete" else change.old_size
    return count, nbytes


def undo_room(history: HistoryStore, ops: Sequence[Op]) -> str:
    """Why an undo of ``ops`` would not fit ("" when it does): what it takes away is kept and its own record is
    written (the history's bounds); what it puts back from a history on another file system is copied (the
    project's disk)."""
    count = nbytes = back = copied = 0
    record = _RECORD_LINE  # the undo's own record: the call it undoes, and a line per step
    store = os.stat(history.directory).st_dev
    elsewhere: dict[str, bool] = {}  # root -> whether the history lies on another file system
    for op in ops:
        applied = op.record
        if applied is None:
            continue
        if op.root not in elsewhere:
            elsewhere[op.root] = os.stat(op.root).st_dev != store
        record += 2 * encoded_size(applied.path) + _RECORD_LINE + _xattr_bytes(applied.xattrs, applied.old_xattrs)
        if op.kind in ("remove", "swap"):
            count += 1
            size = applied.after[3] if len(applied.after) >= 4 else 0
            nbytes += size
            copied += size if elsewhere[op.root] else 0  # (copied onto the history's disk, not moved)
        if op.kind in ("restore", "swap") and elsewhere[op.root]:
            with contextlib.suppress(HistoryError):
                back += history.metadata(applied.before).size
    why = history.room(count, nbytes, copied=copied, record=record)
    if not why and back:
        fs = os.statvfs(next(op.root for op in ops))
        if back + (1 << 20) > fs.f_bavail * fs.f_frsize:
            why = f"putting the previous contents back needs {back} bytes on the project's disk; it has less free"
    return why


def _attributes(op: Op) -> tuple[Xattrs, Xattrs]:
    return (op.change.xattrs, op.change.old_xattrs) if op.change is not None else ((), ())


def _xattr_bytes(*lists: Xattrs) -> int:
    """The bytes attributes take in a record (names and hex values)."""
    return sum(len(name) + 2 * len(value) + 8 for xattrs in lists for name, value in xattrs)
