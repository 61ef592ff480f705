"""The steps of an undo, and what they need to know: made from a call's records, last first.

``reverse_ops`` turns a call's records (``changes.plan.Applied``) into the steps that put back what they did — an
undo, or the rollback of a run that could not finish — and says which paths changed since (a conflict that stops
an undo unless forced). ``kept_as_before`` keeps a redo's pre-images under the ids the undone call kept them under;
``named_files`` finds the names the records' files have now (an undo that takes one name of a file away notes
another that stays). The steps themselves are ``changes.revert``'s; the run is ``changes.apply``'s.
"""

from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from mcp_server_guard.changes.changeset import ROOT, DirTime
from mcp_server_guard.changes.nofollow import DIR, Changed, lstat_beneath, open_dir
from mcp_server_guard.changes.plan import Applied, Op
from mcp_server_guard.changes.revert import as_left, names_in_roots
from mcp_server_guard.changes.revert import root_of as _root_of
from mcp_server_guard.files.history import HistoryError, HistoryStore

__all__ = ["kept_as_before", "named_files", "put_back_since", "reverse_ops"]


def reverse_ops(
    history: HistoryStore,
    records: Sequence[Applied],
    roots: Sequence[str],
    applied_ns: int,
    *,
    force: bool,
    since: Mapping[str, int] | None = None,
    audit_id: str = "",
) -> tuple[list[Op], list[str]]:
    """The steps that put back what ``records`` did, last first, and (unless ``force``) the paths changed since
    (``applied_ns``: when they were done; ``since``: a later time for a path later undos put back, see
    ``revert.put_back_since``; ``audit_id``: the call's, for files put back as copies, ``copied_back``) — an undo,
    or the rollback of a run that could not finish."""
    copied = copied_back(history, audit_id, applied_ns, records) if audit_id and not force else {}
    ops: list[Op] = []
    times: list[Op] = []
    changed: list[str] = []
    wholesale: set[str] = set()  # directories a later record made, replaced or deleted as a whole
    named: set[str] = set()  # paths of the later records
    # Files a later record changes the metadata of (device, inode): one file with several names re-moded through
    # each name in one run is as the last of those steps left it, which that step's check looks at.
    inodes: set[tuple[int, int]] = set()
    # A directory's time as the call's last record of it left it (a job made ``m`` at one look and wrote in it at a
    # later one): an earlier record of that directory is checked against that time.
    left_at: dict[str, int] = {}
    for record in reversed(records):
        root = _root_of(record.path, roots)
        if root is None:
            changed.append(f"{record.path} (outside the allowed directories now)")
            continue
        rel = posixpath.relpath(record.path, root) if record.path != root else ROOT
        # A path inside such a directory is as that later record's check finds its tree (a name removed, then its
        # directory replaced: ``mv d d2 && mv d2 d`` undone and redone), not as this earlier record left it.
        # A path a later record names too (a job's later part changed it again): that record's check stands for
        # both, its undo first putting back what this one left.
        covered = record.path in named or any(parent in wholesale for parent in _parents(record.path))
        inode = (record.after[0], record.after[1]) if record.kind == "file" and len(record.after) >= 2 else None
        covered = covered or (record.action == "meta" and inode in inodes)
        if record.action != "times":  # a directory's time is put back whatever happened since: it checks nothing
            named.add(record.path)
        else:
            left_at.setdefault(record.path, record.mtime_ns)
        checked = record
        if record.kind == "dir" and record.action != "times" and record.path in left_at and len(record.after) >= 3:
            checked = replace(record, after=(*record.after[:2], left_at[record.path], *record.after[3:]))
        if record.action == "meta" and inode is not None:
            inodes.add(inode)
        if record.moved_from:  # a later move of the path: its check (at the new name) stands for the old name too
            named.add(record.moved_from)
        if (
            not force
            and not covered
            and not as_left(root, rel, checked, (since or {}).get(record.path, applied_ns), copied.get(record.path, ()))
        ) or (not force and not covered and _holds_others(root, rel, record, named)):
            changed.append(record.path)
        if record.action in ("create", "modify", "delete") and (record.tree or record.kind == "dir" or _was_tree(
            history, record)):  # a directory replaced by a file or a link: its tree went whole too  # fmt: skip
            wholesale.add(record.path)
        if record.action == "times":
            now = _mtime(root, rel)
            time = DirTime(rel, record.old_mtime_ns, 0, now if now is not None else record.mtime_ns)
            times.append(Op("untimes", root, rel, record=record, time=time))
        elif record.action == "create":
            kind = "unmove" if record.moved_from else "remove"
            ops.append(Op(kind, root, rel, entry=history.new_id(), record=record))
        elif record.action == "modify":
            kind = "swap" if record.before else "remove"
            ops.append(Op(kind, root, rel, entry=history.new_id(), record=record))
        elif record.action == "delete" and record.before:
            ops.append(Op("restore", root, rel, record=record))
        elif record.action == "meta":
            ops.append(Op("unmeta", root, rel, record=record))
    return ops + times, changed


def _holds_others(root: str, rel: str, record: Applied, named: set[str]) -> bool:
    """Whether a directory the call made (its tree not counted: a job's look made it, then wrote in it at later ones)
    holds an entry no record of the call names — the user's, put there since. Threat (red team 169 F1): its time set
    back by a later call (``touch -d``), the undo took it for as the call left it and removed the user's file with
    it, saying it succeeded."""
    if record.action != "create" or record.kind != "dir" or record.tree:
        return False
    try:
        base = os.open(root, DIR)
    except OSError:
        return False
    try:
        fd = open_dir(base, "" if rel == ROOT else rel)
        try:
            names = os.listdir(fd)
        finally:
            os.close(fd)
    except (OSError, Changed):
        return False  # (not there, or not a directory: as_left says so)
    finally:
        os.close(base)
    return any(posixpath.join(record.path, name) not in named for name in names)


def copied_back(
    history: HistoryStore, audit_id: str, applied_ns: int, records: Sequence[Applied]
) -> dict[str, tuple[int, ...]]:
    """For each file the call left that later calls replaced and undos then put back (every later call that touched
    it undone, newest first) as a *copy* of what the call left — file_write keeps what it replaces as a copy, another
    inode —, the identity that copy has where the last of those undos placed it. Threat to exactness (red team 109
    F3): rolling a session back newest first stopped at the earlier call, its file taken for someone else's change.
    Only where the call that replaced it recorded the very file (device, inode, time, size) the record says it left."""
    files = {r.path: r for r in records if r.kind == "file" and r.action in ("create", "modify") and len(r.after) >= 4}
    manifests = history.calls.all() if files else []
    since = put_back_since(history, audit_id, applied_ns, list(files), manifests) if files else {}
    if not since:
        return {}
    found: dict[str, tuple[int, ...]] = {}
    for path, at in since.items():
        undo = next((m for m in manifests if int(m.get("applied_ns", 0)) == at and m.get("undoes")), None)
        undone = next((m for m in manifests if undo is not None and m.get("audit_id") == undo["undoes"]), None)
        if undo is None or undone is None:
            continue
        replaced = [
            c.get("replaced") for c in undone.get("changes", []) if isinstance(c, dict) and c.get("path") == path
        ]
        placed = [c.get("after") for c in undo.get("changes", []) if isinstance(c, dict) and c.get("path") == path]
        if replaced == [list(files[path].after[:4])] and len(placed) == 1 and isinstance(placed[0], list):
            found[path] = tuple(int(v) for v in placed[0])
    return found


def _was_tree(history: HistoryStore, record: Applied) -> bool:
    """Whether what ``record`` replaced was a directory kept whole (a directory replaced by a file or a link)."""
    if record.action != "modify" or not record.before:
        return False
    try:
        return history.kind(record.before) == "tree"
    except HistoryError:
        return False


def _parents(path: str) -> Iterator[str]:
    while (path := posixpath.dirname(path)) not in ("/", ""):
        yield path


def kept_as_before(history: HistoryStore, ops: Sequence[Op], undid: str) -> list[Op]:
    """A redo (the undo of an undo of call ``undid``): what it takes away is what that call had kept before it —
    kept again under the same ids (free since the undo took them out), so that the call, in force again, can be
    undone again."""
    try:
        earlier = history.calls.read(undid)
    except HistoryError:
        return list(ops)
    # A path the call changed in several parts (a job's looks) has a pre-image per part: the redo keeps each again
    # in the call's order (it plays the undo's records back newest first, the undo played the call's so).
    kept: dict[str, list[str]] = {}
    for change in earlier.get("changes", []):
        if change.get("before"):
            kept.setdefault(str(change.get("path", "")), []).append(str(change["before"]))
    out = []
    for op in ops:
        taken = kept.get(op.record.path) if op.record is not None and op.kind in ("remove", "swap") else None
        entry = taken.pop(0) if taken else ""
        # Threat: a record naming a path as its entry (``../``): only an id's shape is a name in the store.
        free = history.is_id(entry) and not any(
            os.path.lexists(history.directory / f"{entry}{suffix}") for suffix in (".json", ".data", ".tree")
        )
        out.append(replace(op, entry=entry) if free else op)
    return out


def named_files(
    records: Sequence[Applied], roots: Sequence[str], others: Sequence[str] = ()
) -> dict[tuple[int, int], list[str]]:
    """The files a call's records name (and ``others``: the paths of a run being rolled back), by inode, with those
    names (as they are now): an undo that takes one name of a file away notes another that stays, and one that
    restores a name of an inode still here links it."""
    names: dict[tuple[int, int], list[str]] = {}
    nlinks: dict[tuple[int, int], int] = {}
    paths = [p for r in records for p in (r.path, r.stays, r.link, r.moved_from) if p]
    for path in dict.fromkeys([*paths, *others]):
        root = _root_of(path, roots)
        if root is None or path == root:
            continue
        st = lstat_beneath(root, posixpath.relpath(path, root))
        if st is not None and stat.S_ISREG(st.st_mode):
            names.setdefault((st.st_dev, st.st_ino), []).append(path)
            nlinks[(st.st_dev, st.st_ino)] = st.st_nlink
    # Files the records keep names of (their groups) with names no record names (``d/x2`` when a call moved the
    # directory of its other name): looked for in the roots, bounded (past that, not all of them are known).
    wanted = {(r.group[0], r.group[1]) for r in records if len(r.group) == 2}
    wanted |= {group for group, found in names.items() if nlinks.get(group, 1) > len(found)}
    wanted -= {group for group, found in names.items() if nlinks.get(group, 1) <= len(found)}
    if wanted:
        names_in_roots(names, wanted, roots, [posixpath.dirname(p) for p in paths])
    return names


def _mtime(root: str, rel: str) -> int | None:
    """A directory's modification time now (None when it is not there), no link followed."""
    st = lstat_beneath(root, rel)
    return st.st_mtime_ns if st is not None and stat.S_ISDIR(st.st_mode) else None


def _above(path: str) -> Iterator[str]:
    """The directories above ``path``, nearest first."""
    while (path := posixpath.dirname(path)) not in ("", "/"):
        yield path


def put_back_since(
    history: HistoryStore, audit_id: str, applied_ns: int, paths: Sequence[str], calls: Sequence[Any] = ()
) -> dict[str, int]:
    """For each of ``paths`` that calls after call ``audit_id`` changed and undos then put back — every later call
    that touched it undone, newest first — the time of the last of those undos: what stands there since is what
    that call left (an undo puts a file or a directory back by a rename, which changes its ctime: red team 175).
    Undoing several calls newest first then finds each path as its call left it; a later call still in force (or a
    redo) leaves the path out: judged from the call's own time, it shows as changed. (``calls``: the records, read
    already.) Each later call's names are indexed once: a call of many paths is looked up path by path."""
    later: list[tuple[dict[str, Any], set[str], set[str], set[str]]] = []
    for manifest in calls or history.calls.all():
        if int(manifest.get("applied_ns", 0)) > applied_ns and manifest.get("audit_id") != audit_id:
            changes = [c for c in manifest.get("changes", []) if isinstance(c, dict) and c.get("action") != "times"]
            # (each name a record reaches: its path, and the other names it links, moves or keeps — red team 177 F2)
            names = {str(c.get(key) or "") for c in changes for key in ("path", "link", "moved_from", "stays")} - {""}
            # (a directory put back whole puts back what is in it; a mode or time set on it does not: 177 F1)
            wholes = {str(c.get("path", "")) for c in changes if c.get("action") != "meta"}
            later.append((manifest, names, wholes, {a for n in names for a in _above(n)}))
    found: dict[str, int] = {}
    for path in paths if later else ():
        stack: list[str] = []
        last = 0
        for manifest, names, wholes, above in later:
            if not (path in names or path in above or any(a in wholes for a in _above(path))):
                continue
            if stack and manifest.get("undoes") == stack[-1]:
                stack.pop()
                last = int(manifest.get("applied_ns", 0))
            else:
                stack.append(str(manifest.get("audit_id", "")))
        if last and not stack:
            found[path] = last
    return found
