"""An apply's plan, as data: the steps made from a change set, what each step did, and the journal that keeps both
on disk until the apply is finished.

The plan (:func:`steps_for`) places trees and files first, in the order the reader found them (parents before
children), then mode changes, then deletions; an entry inside a tree that moves whole is no step of its own. Before
the first change the whole plan is written to ``.journal/apply-<auditId>.json`` in the history store (fsynced,
locked for as long as its process applies: :class:`Journal`); each finished step appends a line with what it
applied (:class:`Applied`) and its conflicts (:class:`Conflict`), read back by :func:`read_journal` when a dead
server's apply is finished. An undo's plan has the same shape (its steps made by ``Applier.undo``).

Not here: running a step against the real tree (``changes.steps``), nor the run and the recovery themselves
(``changes.apply``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_server_guard.changes.nofollow import DIR, Changed, lstat_at, parent
from mcp_server_guard.changes.upper import Change, ChangeSet
from mcp_server_guard.files.history import HistoryStore

__all__ = ["JOURNALS", "Applied", "Conflict", "Journal", "Op", "Outcome", "read_journal", "steps_for"]

JOURNALS = ".journal"  # the apply journals, in the history store


@dataclass(frozen=True)
class Conflict:
    """A change not applied as the command made it, because the real tree changed meanwhile."""

    path: str  # absolute
    what: str  # in words: why, and where the command's version went


@dataclass(frozen=True)
class Applied:
    """One path applied (or reverted): what the record of the call keeps for undo."""

    path: str  # absolute
    action: str  # create, modify, delete, meta
    kind: str
    before: str = ""  # the history entry of what was there ("" when nothing was)
    after: tuple[int, ...] = ()  # (dev, ino, ctime_ns, size) of what we put there; empty when nothing
    tree: bool = False
    old_mode: int = -1  # meta: the mode before (and mtime before)
    old_mtime_ns: int = 0
    sha256: str = ""  # what the file held then, where known (file_write): the same bytes count as the same file

    def record(self) -> dict[str, Any]:
        return {
            "path": self.path, "action": self.action, "kind": self.kind, "before": self.before,
            "after": list(self.after), "tree": self.tree, "old_mode": self.old_mode, "old_mtime_ns": self.old_mtime_ns,
            "sha256": self.sha256,
        }  # fmt: skip

    @classmethod
    def of(cls, data: dict[str, Any]) -> Applied:
        after = data.get("after") or []
        return cls(
            path=str(data["path"]), action=str(data["action"]), kind=str(data.get("kind", "file")),
            before=str(data.get("before", "")), after=tuple(int(v) for v in after),
            tree=bool(data.get("tree")), old_mode=int(data.get("old_mode", -1)),
            old_mtime_ns=int(data.get("old_mtime_ns", 0)), sha256=str(data.get("sha256", "")),
        )  # fmt: skip


@dataclass
class Outcome:
    """What an apply or an undo did: the paths applied (or reverted), and the conflicts."""

    applied: list[Applied] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)


class Journal:
    """The plan of one apply, and the steps done so far (see the module docstring)."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path, self.fd = path, fd

    @classmethod
    def create(cls, directory: Path, audit_id: str, plan: dict[str, Any]) -> Journal:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = directory / f"apply-{audit_id}.json"
        # Written whole under a temp name, then renamed: a journal that exists names its whole plan (and is locked).
        temp = directory / f".apply-{audit_id}.{os.getpid()}.tmp"
        fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, json.dumps(plan, ensure_ascii=False).encode("utf-8", "surrogateescape") + b"\n")
            os.fsync(fd)
            os.rename(temp, path)
        except BaseException:
            os.close(fd)
            temp.unlink(missing_ok=True)
            raise
        return cls(path, fd)

    def done(self, index: int, records: list[Applied], conflicts: list[Conflict]) -> None:
        line = {"done": index, "applied": [a.record() for a in records],
                "conflicts": [[c.path, c.what] for c in conflicts]}  # fmt: skip
        with contextlib.suppress(OSError):
            os.write(self.fd, json.dumps(line, ensure_ascii=False).encode("utf-8", "surrogateescape") + b"\n")

    def close(self) -> None:
        self.path.unlink(missing_ok=True)
        os.close(self.fd)


@dataclass(frozen=True)
class Op:
    """One step of a plan: ``kind`` is tree, place, meta or delete (apply); remove, restore, unmeta (undo)."""

    kind: str
    root: str  # the real root
    path: str  # relative to it
    upper: str = ""  # apply: the upper root the command's version lies in
    entry: str = ""  # the history id this step keeps a pre-image under (or restores from)
    change: dict[str, Any] = field(default_factory=dict)  # apply: the Change; undo: the Applied record

    def plan(self) -> dict[str, Any]:
        return {"kind": self.kind, "root": self.root, "path": self.path, "upper": self.upper, "entry": self.entry,
                "change": self.change}  # fmt: skip


def steps_for(
    changes: ChangeSet, skip: frozenset[tuple[str, str]], history: HistoryStore, *, live: bool = False
) -> list[Op]:
    """The steps for one change set: trees and files first (in the order the reader found them: parents before
    children), then mode changes, then deletions. Entries inside a tree that moves whole are not steps of their
    own; a refused one is taken out of the tree first (removed from the upper layer). ``live``: every path is a
    step of its own, copied (the upper layer still belongs to a running command)."""
    if live:
        return _live_plan(changes, skip, history)
    root, upper = changes.root, changes.upper
    skipped = {path for r, path in skip if r == root}
    firsts: list[Op] = []
    metas: list[Op] = []
    deletes: list[Op] = []
    for change in changes.changes:
        if change.path in skipped:
            if change.top and change.action == "create":
                _drop(upper, change.path)
            continue
        if change.top:
            continue  # moves (or goes) with its top
        data = _change_data(change)
        if change.action in ("create", "modify"):
            kind = "tree" if change.kind == "dir" else "place"
            firsts.append(Op(kind, root, change.path, upper=upper, entry=history.new_id(), change=data))
        elif change.action == "meta":
            metas.append(Op("meta", root, change.path, upper=upper, change=data))
        elif change.action == "delete":
            deletes.append(Op("delete", root, change.path, entry=history.new_id(), change=data))
    return [*firsts, *metas, *deletes]


def _live_plan(changes: ChangeSet, skip: frozenset[tuple[str, str]], history: HistoryStore) -> list[Op]:
    root, upper = changes.root, changes.upper
    skipped = {path for r, path in skip if r == root}
    firsts: list[Op] = []
    metas: list[Op] = []
    deletes: list[Op] = []
    for change in changes.changes:
        if change.path in skipped or (change.top and change.top in skipped and change.action == "delete"):
            continue
        data = _change_data(change)
        if change.action == "delete":
            if change.top:
                continue  # goes with its top
            deletes.append(Op("delete", root, change.path, entry=history.new_id(), change=data))
        elif change.opaque:
            continue  # a tree replaced while the job runs: applied when it ends
        elif change.action in ("create", "modify"):
            firsts.append(Op("copy", root, change.path, upper=upper, entry=history.new_id(), change=data))
        elif change.action == "meta":
            metas.append(Op("meta", root, change.path, upper=upper, change=data))
    return [*firsts, *metas, *deletes]


def _change_data(change: Change) -> dict[str, Any]:
    return {name: getattr(change, name) for name in change.__dataclass_fields__}


def _drop(upper: str, rel: str) -> None:
    """Take a refused entry out of the command's tree before the tree moves (the upper layer is ours now)."""
    from mcp_server_guard.files.trees import remove_tree  # noqa: PLC0415 - rare

    with contextlib.suppress(OSError, Changed):
        fd = os.open(upper, DIR)
        try:
            with parent(fd, rel) as (dirfd, name):
                st = lstat_at(name, dirfd)
                if st is None:
                    return
                if stat.S_ISDIR(st.st_mode):
                    remove_tree(Path(f"/proc/self/fd/{dirfd}") / name)
                else:
                    os.unlink(name, dir_fd=dirfd)
        finally:
            os.close(fd)


def read_journal(lines: list[str]) -> tuple[dict[str, Any] | None, dict[int, tuple[list[Applied], list[Conflict]]]]:
    """A journal's lines read back: its plan (None when it was torn before it was whole) and the steps done."""
    if not lines:
        return None, {}
    try:
        plan = json.loads(lines[0])
    except ValueError:
        return None, {}  # torn before it was complete: nothing was changed yet
    done: dict[int, tuple[list[Applied], list[Conflict]]] = {}
    for line in lines[1:]:
        try:
            step = json.loads(line)
            done[int(step["done"])] = (
                [Applied.of(a) for a in step.get("applied", [])],
                [Conflict(str(p), str(w)) for p, w in step.get("conflicts", [])],
            )
        except (ValueError, KeyError, TypeError):
            continue  # a torn last line: that step is checked again
    return plan, done
