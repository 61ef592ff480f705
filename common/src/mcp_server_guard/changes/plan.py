"""An apply's plan, as data: the steps made from a change set, and what each step did.

The plan (:func:`steps_for`) changes the metadata of what stays first (modes, times, attributes: judged against
the tree as the command found it, before any of our own steps touches it), makes new names of real files as they
are (each before the path it is made of is replaced; in the command's trees too, before they move), renames
the real files that moved whole, places trees and files (in the order the reader found them: parents before
children), makes new names of what it placed (hard links), deletes, and last puts back the modification
times the command left on the directories it touched. An entry inside a tree that moves whole is no step of its
own. Before the first change the whole plan is written to the apply's journal (``changes.journal``); each
finished step appends a line with what it applied (:class:`Applied`) and its conflicts (:class:`Conflict`). An
undo's plan has the same shape (its steps made by ``Applier.undo``).

Not here: the journal and its seals (``changes.journal``), running a step against the real tree
(``changes.steps``), nor the run and the recovery themselves (``changes.apply``).
"""

from __future__ import annotations

import logging
import os
import posixpath
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TypedDict, get_args

from mcp_server_guard import linux
from mcp_server_guard.changes.changeset import Action, Change, ChangeSet, DirTime, Kind
from mcp_server_guard.changes.narrow import exact, flag, items, mapping, number, text
from mcp_server_guard.changes.nofollow import DIR, Changed, lstat_at, lstat_beneath, parent
from mcp_server_guard.changes.what import What
from mcp_server_guard.changes.xattrs import Xattrs, acls, at
from mcp_server_guard.files import planted as _planted
from mcp_server_guard.files.history import HistoryStore

log = logging.getLogger("mcp_server_guard.changes")

__all__ = [
    "NO_TIME",
    "Applied",
    "Conflict",
    "NotApplied",
    "Op",
    "Outcome",
    "Plan",
    "UndoConflict",
    "held_back",
    "not_stale",
    "nothing_refused",
    "steps_for",
    "xattrs_of",
]


@dataclass(frozen=True)
class Conflict:
    """A change not applied as the command made it, because the real tree changed meanwhile."""

    path: str  # absolute
    what: str  # in words: why, and where the command's version went
    skipped: bool = False  # the step did nothing (its change is not in the tree); else it went beside

    def json(self) -> list[object]:
        return [self.path, self.what, *([True] if self.skipped else [])]

    @classmethod
    def of(cls, data: object) -> Conflict:
        line = items(data)
        return cls(text(line[0]), text(line[1]), bool(line[2:] and line[2]))


def _hex(xattrs: Xattrs) -> list[list[str]]:
    return [[name, value.hex()] for name, value in xattrs]


def xattrs_of(data: object) -> Xattrs:
    """Attributes read back from a record or journal (``[[name, hex], ...]``)."""
    if not isinstance(data, list):
        return ()
    return tuple(sorted((text(name), bytes.fromhex(text(value))) for name, value in map(items, data)))


# A "times" record's time before, for a directory the command made (it had none). (0 is a time: the epoch.)
NO_TIME = -1


@dataclass(frozen=True)
class Applied:
    """One path applied (or reverted): what the record of the call keeps for undo."""

    path: str  # absolute
    action: str  # create, modify, delete, meta, times
    kind: str
    before: str = ""  # the history entry of what was there ("" when nothing was)
    after: tuple[int, ...] = ()  # (dev, ino, mtime_ns, size) of what we put there; empty when nothing
    tree: bool = False
    old_mode: int = -1  # meta: the mode before; and the modification time before (meta, times)
    old_mtime_ns: int = 0
    sha256: str = ""  # what the file held then, where known (file_write): the same bytes count as the same file
    mode: int = -1  # meta, and a regular file made or replaced: the mode we left
    attrs: str = ""  # a regular file made or replaced: a digest of the attributes we left (linux.attributes_digest)
    links: int = 0  # ... and the number of names it had
    mtime_ns: int = 0  # meta, times: the modification time we left
    xattrs: Xattrs = ()  # meta: the user.* attributes we left, and those before (by the names a command sees)
    old_xattrs: Xattrs = ()
    moved_from: str = ""  # create: the file renamed here from this absolute path (undo renames it back)
    link: str = ""  # create, modify: made another name of this absolute path
    group: tuple[int, ...] = ()  # modify, delete: (dev, ino) of what was there: names of one inode come back as one
    stays: str = ""  # modify, delete: another name of what was there, that stayed (absolute)

    def record(self) -> dict[str, object]:
        data = _shallow(self, _APPLIED_FIELDS)  # not dataclasses.asdict: it deep-copies, field by field
        data["after"], data["group"] = list(self.after), list(self.group)
        data["xattrs"], data["old_xattrs"] = _hex(self.xattrs), _hex(self.old_xattrs)
        for empty in ("attrs", "links"):
            if not data[empty]:
                del data[empty]  # (a record of a kind that has none reads and writes back as before)
        return data

    @classmethod
    def of(cls, data: Mapping[str, object]) -> Applied:
        """Read back from a call's record or a journal (a change of the record: see ``record``)."""
        return cls(
            path=text(data["path"]), action=text(data["action"]), kind=text(data.get("kind", "file")),
            before=text(data.get("before", "")), after=tuple(number(v) for v in items(data.get("after"))),
            tree=bool(data.get("tree")), old_mode=number(data.get("old_mode", -1)),
            old_mtime_ns=number(data.get("old_mtime_ns", 0)), sha256=text(data.get("sha256", "")),
            mode=number(data.get("mode", -1)), attrs=text(data.get("attrs", "")), links=number(data.get("links", 0)),
            mtime_ns=number(data.get("mtime_ns", 0)),
            xattrs=xattrs_of(data.get("xattrs")), old_xattrs=xattrs_of(data.get("old_xattrs")),
            moved_from=text(data.get("moved_from", "")), link=text(data.get("link", "")),
            group=tuple(number(v) for v in items(data.get("group"))), stays=text(data.get("stays", "")),
        )  # fmt: skip


_APPLIED_FIELDS = tuple(f.name for f in fields(Applied))


@dataclass(frozen=True)
class Outcome:
    """What an apply or an undo did: the paths applied (or reverted), and the conflicts (built once the run is over)."""

    applied: list[Applied] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    marked: list[str] = field(default_factory=list)  # absolute paths that landed with user.overlay.* attributes
    recorded: bool = False  # the call has a record (what its undo plays back): this apply's, or an earlier part's


def _shallow(value: object, names: tuple[str, ...]) -> dict[str, object]:
    return {name: getattr(value, name) for name in names}


_CHANGE_FIELDS = tuple(f.name for f in fields(Change))
_TIME_FIELDS = tuple(f.name for f in fields(DirTime))


def change_json(change: Change) -> dict[str, object]:
    data = _shallow(change, _CHANGE_FIELDS)
    data["xattrs"], data["old_xattrs"] = _hex(change.xattrs), _hex(change.old_xattrs)
    return data


_ACTIONS: tuple[Action, ...] = get_args(Action)
_KINDS: tuple[Kind, ...] = get_args(Kind)


def change_of(data: Mapping[str, object]) -> Change:
    """A change read back from a journal: every field as ``change_json`` wrote it (absent: its default)."""
    action = next((a for a in _ACTIONS if a == data["action"]), None)
    kind = next((k for k in _KINDS if k == data["kind"]), None)
    if action is None or kind is None:
        raise ValueError(f"not a change: {data['action']!r} of a {data['kind']!r}")

    def word(name: str) -> str:
        return exact(data.get(name, ""), str)

    def count(name: str) -> int:
        return exact(data.get(name, 0), int)

    def said(name: str) -> bool:
        return flag(data.get(name, False))

    return Change(
        exact(data["path"], str), action, kind, size=count("size"), old_size=count("old_size"), mode=count("mode"),
        old_mode=count("old_mode"), top=word("top"), opaque=said("opaque"), origin=said("origin"),
        mtime_ns=count("mtime_ns"), old_mtime_ns=count("old_mtime_ns"), xattrs=xattrs_of(data.get("xattrs")),
        old_xattrs=xattrs_of(data.get("old_xattrs")), link=word("link"), link_old=said("link_old"),
        stays=word("stays"), moved_from=word("moved_from"), gone=said("gone"), inode=count("inode"),
        shown=said("shown"), names=count("names"), over=said("over"),
    )  # fmt: skip


def time_of(data: Mapping[str, object]) -> DirTime:
    """A directory's time read back from a journal."""
    return DirTime(exact(data["path"], str), exact(data["mtime_ns"], int), exact(data["ctime_ns"], int),
                   exact(data.get("old_mtime_ns", 0), int))  # fmt: skip


@dataclass(frozen=True)
class Op:
    """One step of a plan. Apply: ``meta``, ``move``, ``tree``, ``place``, ``copy`` (a running job's), ``link``,
    ``delete``, ``times``; undo: ``remove``, ``restore``, ``swap``, ``unmove``, ``unmeta``, ``untimes``."""

    kind: str
    root: str  # the real root
    path: str  # relative to it
    upper: str = ""  # apply: the upper root the command's version lies in
    entry: str = ""  # the history id this step keeps a pre-image under (or restores from)
    change: Change | None = None  # apply: what the command did
    record: Applied | None = None  # undo: what the call did
    time: DirTime | None = None  # times: the directory's time the command left, and before
    marked: tuple[str, ...] = ()  # tree: paths in it (root-relative) with attributes to take away before it moves

    def plan(self) -> dict[str, object]:
        return {
            "kind": self.kind, "root": self.root, "path": self.path, "upper": self.upper, "entry": self.entry,
            "marked": list(self.marked),
            "change": change_json(self.change) if self.change is not None else None,
            "record": self.record.record() if self.record is not None else None,
            "time": _shallow(self.time, _TIME_FIELDS) if self.time is not None else None,
        }  # fmt: skip

    @classmethod
    def of(cls, data: Mapping[str, object]) -> Op:
        change, record, time = data.get("change"), data.get("record"), data.get("time")
        return cls(
            kind=text(data["kind"]), root=text(data["root"]), path=text(data["path"]),
            upper=text(data.get("upper", "")), entry=text(data.get("entry", "")),
            change=change_of(change) if isinstance(change, dict) else None,
            record=Applied.of(record) if isinstance(record, dict) else None,
            time=time_of(time) if isinstance(time, dict) else None,
            marked=tuple(text(m) for m in items(data.get("marked"))),
        )  # fmt: skip


@dataclass(frozen=True)
class Plan:
    """What one apply (or undo) does, in order: what the journal holds before the first step."""

    audit_id: str
    started_ns: int  # when the command started: what changed later is someone else's
    ops: tuple[Op, ...]
    what: What = field(default_factory=What)  # the call, for its record

    def json(self, baseline: dict[str, int]) -> dict[str, object]:
        """The plan as the journal's first line holds it, with the baseline the run starts from."""
        return {"audit_id": self.audit_id, "started_ns": self.started_ns, "ops": [op.plan() for op in self.ops],
                "what": self.what.json(), "baseline": baseline}  # fmt: skip

    @classmethod
    def of(cls, data: Mapping[str, object]) -> tuple[Plan, dict[str, int]]:
        """Read back from a journal (KeyError, TypeError, ValueError: not a plan of ours)."""
        ops = tuple(Op.of(mapping(op)) for op in items(data["ops"]))
        what = What.of(mapping(data.get("what") or {}))
        plan = cls(text(data["audit_id"]), number(data["started_ns"]), ops, what)
        return plan, {text(k): number(v) for k, v in mapping(data.get("baseline") or {}).items()}


def steps_for(
    changes: ChangeSet, skip: frozenset[tuple[str, str]], history: HistoryStore, *, live: bool = False
) -> list[Op]:
    """The steps for one change set (see the module docstring for their order). Entries inside a tree that moves
    whole are not steps of their own; a refused one, or one that becomes a name of a real file, is taken out of
    the tree first (removed from the upper layer). ``live``: every path is a step of its own, copied (the upper
    layer still belongs to a running command)."""
    if live:
        return _live_plan(changes, skip, history)
    root, upper = changes.root, changes.upper
    skipped = {path for r, path in skip if r == root}
    moved = {c.moved_from for c in changes.changes if c.moved_from and not {c.path, c.moved_from} & skipped}
    metas: list[Op] = []
    early: list[Op] = []  # new names of real files as they are before anything else (before a move takes one away)
    moves: list[Op] = []
    firsts: list[Op] = []
    links: list[Op] = []  # new names of files placed by this apply
    deletes: list[Op] = []
    reached: set[int] = set()
    stuck: set[str] = set()  # trees that still hold an entry that may not land: they do not move
    for change in changes.changes:
        linked = bool(change.link) and change.action != "delete"  # a delete's link is the name that stays
        if change.path in skipped or (linked and change.link in skipped):
            if change.top and change.action == "create" and not _drop(upper, change.path):
                stuck.add(change.top)
            continue
        if linked and change.top and change.link_old:
            # Of a real file all of whose names go (with trees): made in the command's tree before anything moves.
            early.append(Op("adopt", root, change.path, upper=upper, entry=history.new_id(), change=change))
            continue
        if linked:
            if change.top and not _drop(upper, change.path):  # the tree lands without it; the link comes after
                stuck.add(change.top)
            (early if change.link_old else links).append(Op("link", root, change.path, entry=history.new_id(),
                                                             change=change))  # fmt: skip
            continue
        if change.top:
            continue  # moves (or goes) with its top
        if change.moved_from and change.moved_from not in skipped:
            moves.append(Op("move", root, change.path, change=change))
        elif change.moved_from:  # the old name may not go (refused): the command's file is placed as a new one
            firsts.append(Op("place", root, change.path, upper=upper, entry=history.new_id(),
                             change=replace(change, moved_from="")))  # fmt: skip
        elif change.action in ("create", "modify"):
            kind = "tree" if change.kind == "dir" else "place"
            inside = tuple(m for m in changes.marked if m.startswith(change.path + "/")) if kind == "tree" else ()
            firsts.append(Op(kind, root, change.path, upper=upper, entry=history.new_id(), change=change,
                             marked=inside))  # fmt: skip
        elif change.action == "meta":
            if change.inode and change.inode in reached:
                continue  # another name of a file whose metadata one step changes (it was judged as a name of it)
            reached.add(change.inode)
            metas.append(Op("meta", root, change.path, upper=upper, change=change))
        elif change.action == "delete" and change.path not in moved:
            deletes.append(Op("delete", root, change.path, entry=history.new_id(), change=change))
    times = [Op("times", root, time.path, time=time) for time in changes.times if time.path not in skipped]
    # A name made one with a rewritten file in a directory the command never touched (``echo >> q`` where d/q is
    # another name of q): natively its directory keeps its time; the link's rename must not change it either.
    timed = {time.path for time in changes.times}
    untouched = dict.fromkeys(posixpath.dirname(op.path) or ROOT_PATH for op in [*early, *links])
    times += [Op("times", root, path, time=time) for path in untouched if path not in timed
              for time in [_time_now(root, path)] if time is not None]  # fmt: skip
    if stuck:
        firsts = [op for op in firsts if op.path not in stuck]
        links = [op for op in links if not any(op.path.startswith(top + "/") for top in stuck)]
    return [*metas, *_in_order(early, root, history), *moves, *firsts, *links, *deletes, *times]


def _in_order(early: list[Op], root: str, history: HistoryStore) -> list[Op]:
    """New names of real files as they are, each made before the path it is made of is replaced by another
    (``mv a1 t && mv b1 a1`` with a1 and b1 files of several names: ``t`` of a1's file first, then ``a1`` of b1's).
    A cycle (two such files swapped through a temporary name) is broken by a name kept beside one of them for the
    length of these steps (``pin``, removed by ``unpin`` once they are done). Names made in the command's trees
    (``adopt``) replace nothing of the real tree."""
    pending, out, unpins = list(early), [], []
    while pending:
        read = {op.change.link for op in pending if op.change is not None}
        ready = [op for op in pending if op.kind == "adopt" or op.path not in read]
        if not ready:  # a cycle: the file at the first one's path is read through a name of its own meanwhile
            first = pending[0]
            entry = history.new_id()
            pin = posixpath.join(posixpath.dirname(first.path), f".mcp-guard-{entry}.pin")
            out.append(Op("pin", root, pin, entry=entry, change=Change(pin, "create", "file", link=first.path)))
            unpins.append(Op("unpin", root, pin, entry=entry))
            pending = [replace(op, change=replace(op.change, link=pin))
                       if op.change is not None and op.change.link == first.path else op for op in pending]  # fmt: skip
            continue
        out += ready
        pending = [op for op in pending if op not in ready]
    return out + unpins


ROOT_PATH = "."


def _time_now(root: str, rel: str) -> DirTime | None:
    """A directory's time as it is (kept as it is by the apply), or None when it is not a directory of the root."""
    st = lstat_beneath(root, rel)
    if st is None or not stat.S_ISDIR(st.st_mode):
        return None
    return DirTime(rel, st.st_mtime_ns, st.st_ctime_ns, st.st_mtime_ns)


_LOOK_BYTES = 64 << 20  # bytes of files a running job's look copies at most (per root)


def _has_acl(root: str, rel: str) -> bool:
    """Whether the real entry at ``rel`` beneath ``root`` has an access control list (reached with no link followed;
    unreachable: as if it had one)."""
    try:
        fd = os.open(root, DIR)
    except OSError:
        return True
    try:
        with parent(fd, rel) as (dirfd, name):
            return bool(acls(at(dirfd, name)))
    except (OSError, Changed):
        return True
    finally:
        os.close(fd)


def live_waits(changes: ChangeSet) -> set[str]:
    """The paths a running job's look leaves for its end whatever the judgement (passed to the look's apply in its
    ``skip``): every name of a file with several names that the job rewrote or made a new name of (in the copy too:
    ``ln b n && echo >> b``) or changed through any name, every directory it deleted, and what it replaced
    wholesale (a file by a directory, or the reverse), with everything in it, every real file with an access
    control list it rewrote; and, past ``_LOOK_BYTES`` of files, the rest of them.

    Why: overlayfs copies each name of a file up on its own, so across looks the job's copy would show the names as
    files of their own (a later ``touch`` through the other name would take it back to the old bytes), and a change
    through one name moves the ctime all of them share; a deleted directory may be the first half of a move (``mv x
    w/x``) whose files with other names are known as such only while ``x`` stands. At the job's end they are judged
    and land as one call's."""
    linked = [change for change in changes.changes if change.link and change.action != "delete"]
    waits = {change.path for change in linked} | {change.link for change in linked}
    waits |= {c.path for c in changes.changes if c.action == "delete" and c.kind == "dir" and not c.top}
    for change in changes.changes:
        if change.action in ("create", "modify") and (change.opaque or _retyped(changes.root, change.path, change)):
            waits.add(change.path)
            continue
        # Any change to a real file with several names (one name deleted, re-moded, rewritten): it moves the ctime
        # all its names share, so the job's later change through another name would look like someone else's.
        touches = change.kind == "file" and change.action in ("delete", "modify", "meta")
        real = lstat_beneath(changes.root, change.path) if touches else None
        if real is not None and stat.S_ISREG(real.st_mode) and real.st_nlink > 1:
            waits.add(change.path)
        if change.action in ("create", "modify") and change.kind == "file":
            upper = lstat_beneath(changes.upper, change.path)
            if upper is not None and upper.st_nlink > 1:
                waits.add(change.path)
        # A real file with an access control list, rewritten: whether it was renamed over (another file's, that
        # brings its own ACL) or rewritten in place (it keeps its own) is said at the job's end (``Renamed.files``).
        if change.action == "modify" and change.kind == "file" and _has_acl(changes.root, change.path):
            waits.add(change.path)
    # Threat: a look copies (the job still writes its files), so what it copies takes the disk twice until the job
    # ends: a job's 600 MB file copied by a look took the disk half a gigabyte past the floor the job is stopped at
    # (red team 40s F4). A look copies at most _LOOK_BYTES; the rest lands at the job's end, renamed.
    copied = 0
    for change in changes.changes:
        if change.action in ("create", "modify") and change.kind == "file" and change.path not in waits:
            if copied + change.size > _LOOK_BYTES:
                waits.add(change.path)
            else:
                copied += change.size
    return waits | {c.path for c in changes.changes if c.top and c.top in waits}


def _retyped(root: str, path: str, change: Change) -> bool:
    """Whether the real entry at ``path`` is a directory where the change is not one, or the reverse."""
    real = lstat_beneath(root, path)
    return real is not None and stat.S_ISDIR(real.st_mode) != (change.kind == "dir")


def _live_plan(changes: ChangeSet, skip: frozenset[tuple[str, str]], history: HistoryStore) -> list[Op]:
    root, upper = changes.root, changes.upper
    skipped = {path for r, path in skip if r == root}  # refused, and what waits for the job's end (live_waits)
    firsts: list[Op] = []
    metas: list[Op] = []
    deletes: list[Op] = []
    for change in changes.changes:
        if change.path in skipped or (change.top and change.top in skipped and change.action == "delete"):
            continue
        if change.action == "delete":
            if change.top:
                continue  # goes with its top
            deletes.append(Op("delete", root, change.path, entry=history.new_id(), change=change))
        elif change.opaque:
            continue  # a tree replaced while the job runs: applied when it ends
        elif change.action in ("create", "modify"):
            firsts.append(Op("copy", root, change.path, upper=upper, entry=history.new_id(), change=change))
        elif change.action == "meta":
            metas.append(Op("meta", root, change.path, upper=upper, change=change))
    times = [Op("times", root, time.path, time=time) for time in changes.times if time.path not in skipped]
    return [*metas, *firsts, *deletes, *times]


def _drop(upper: str, rel: str) -> bool:
    """Take an entry out of the command's tree before the tree moves (the upper layer is ours now), at any depth.
    False when it could not be taken out (the tree must not move with it)."""
    from mcp_server_guard.files.trees import remove_tree  # noqa: PLC0415 - rare

    try:
        fd = os.open(upper, DIR)
        try:
            with parent(fd, rel) as (dirfd, name):
                st = lstat_at(name, dirfd)
                if st is None:
                    return True
                if stat.S_ISDIR(st.st_mode):
                    remove_tree(Path(f"/proc/self/fd/{dirfd}") / name)
                else:
                    os.unlink(name, dir_fd=dirfd)
                return lstat_at(name, dirfd) is None
        finally:
            os.close(fd)
    except (OSError, Changed) as exc:
        if _gone_above(upper, rel):
            return True  # went with a directory above it, taken out before (a refused ``.vscode`` and its files)
        log.warning("could not take %s out of the command's tree: %s", rel, exc)
        return False


def _gone_above(upper: str, rel: str) -> bool:
    """Whether a directory above ``rel`` is no longer in the upper layer (looked at from the top, no link followed)."""
    parts = rel.split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        try:
            st = os.lstat(os.path.join(upper, *parts[:depth]))
        except FileNotFoundError:
            return True
        except OSError:
            return False
        if not stat.S_ISDIR(st.st_mode):
            return False
    return False


def not_stale(_left: Sequence[Op]) -> str:
    """``Applier.stale`` when nobody judges the steps a run has left (why they may not run: none)."""
    return ""


class UndoConflict(Exception):
    """Undo stopped before changing anything: these paths changed after the call."""

    def __init__(self, paths: list[str]) -> None:
        super().__init__(", ".join(paths))
        self.paths = paths


class NotApplied(Exception):
    """An apply or an undo that did not happen: refused before its first step (``why``), or gone back after a step
    failed — everything it had done put back, except ``left`` (paths it could not put back, with why)."""

    def __init__(self, why: str, left: Sequence[Conflict] = (), *, kept: bool = False) -> None:
        super().__init__(why)
        self.why = why
        self.left = list(left)
        self.kept = kept  # stopped midway with its journal kept: the next start finishes it or goes back over it


class Left(TypedDict):
    """How an apply left a regular file, beyond its identity (``Applied.mode``, ``attrs``, ``links``)."""

    mode: int
    attrs: str
    links: int


def left_as(dirfd: int, name: str, placed: os.stat_result | None) -> Left:
    """The mode, the attributes' digest and the count of names an apply left a regular file with (an undo's check
    that nobody changed them since: ``changed_since``); -1, "" and 0 for anything else."""
    if placed is None or not stat.S_ISREG(placed.st_mode):
        return Left(mode=-1, attrs="", links=0)
    return Left(mode=stat.S_IMODE(placed.st_mode), attrs=linux.attributes_digest(dirfd, name), links=placed.st_nlink)


def changed_since(dirfd: int, name: str, real: os.stat_result, record: Applied) -> bool:
    """Whether a regular file has another mode, another count of names or other attributes than ``record`` says the
    call left it with: a ``chmod``, an ``ln``, a ``setfattr`` after the call, which move its ctime alone (red teams
    94 F1, 96 F2)."""
    if record.mode < 0 or not stat.S_ISREG(real.st_mode):
        return False
    return (
        stat.S_IMODE(real.st_mode) != record.mode
        or (record.links > 0 and real.st_nlink != record.links)
        or (bool(record.attrs) and linux.attributes_digest(dirfd, name) != record.attrs)
    )


def note_planted(sets: Sequence[ChangeSet], skip: frozenset[tuple[str, str]]) -> None:
    """Note the cache markers ``sets`` land (but ``skip``), for every server of the user's judgements
    (``files.planted``), before the apply's first step (red team 87 F1: a marker in a tree placed whole, which its
    record names by its top; F5: judged by another server while this apply breathed). NotApplied when it cannot be."""
    try:
        _planted.planted().add(_planted.kept(posixpath.join(changes.root, change.path)) for changes in sets
                               for change in changes.changes if change.action in ("create", "modify")
                               and (changes.root, change.path) not in skip)  # fmt: skip
    except OSError as exc:
        raise NotApplied(f"what it lands could not be noted for later judgements ({exc.strerror or exc})") from None


def nothing_refused(_ops: Sequence[Op]) -> dict[tuple[str, str], str]:
    """``Applier.restores`` when nobody judges what going back puts back."""
    return {}


def held_back(back: Plan, restores: Callable[[Sequence[Op]], Mapping[tuple[str, str], str]]) -> tuple[Plan, Outcome]:
    """``back``, a run going back, without its steps that would put back what is refused where it lands now
    (``restores``: red team 84 F1 — a long apply let another server make ``shaped/`` a git dir, found its steps left
    refused and went back: putting the earlier ``shaped/config`` back put its ``core.fsmonitor`` in that git dir).
    Those stay as the run left them: recorded (their earlier versions are kept in the history) and said."""
    refused = restores(back.ops)
    if not refused:
        return back, Outcome()
    every = refused.get(("", ""))  # (none could be judged: none is put back)
    held = {index for index, op in enumerate(back.ops) if op.kind in ("restore", "swap") and op.record is not None
            and (every is not None or (op.root, op.path) in refused)}  # fmt: skip
    kept = Outcome()
    for index in sorted(held):
        op = back.ops[index]
        why = every or refused[(op.root, op.path)]
        if op.record is not None:
            kept.applied.append(op.record)
            kept.conflicts.append(
                Conflict(op.record.path, f"not put back: {why}; its earlier version is kept in the history")
            )
    return replace(back, ops=tuple(op for index, op in enumerate(back.ops) if index not in held)), kept
