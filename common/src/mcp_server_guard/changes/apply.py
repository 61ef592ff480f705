"""Applying a change set to the real tree, and undoing one call: through the one guarded writer.

Every change goes where the command put it, relative to its root's directory fd, resolved by the kernel
beneath the root with no symlink followed (``openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)``): a link planted
since, anywhere on the path, is a conflict, never a way out. Nothing is copied that can be renamed: the upper
layer lies on the root's file system, so a new file, a new directory tree (20,000 files: one rename) or a
replaced file lands in one atomic ``rename``; what it replaces or deletes moves (or is hard-linked) into the
history store under the call's audit id. Directories first, then files, then mode changes; deletions last.

**Conflicts.** The command worked on the tree as it was when the call started (``started_ns``, the kernel's
coarse clock). A path someone else changed since (its ctime is not older; it appeared; it vanished) is never
overwritten or deleted: a file of the command's goes beside it (``<name>.mcp-guard-<auditId>``) and the outcome
says so; a deletion or mode change is skipped and said.

**Crash safety.** Before the first change, the whole plan is written to a journal in the history store
(``.journal/apply-<auditId>.json``, fsynced, locked by this process for as long as it applies); each finished
step appends a line. A server killed mid-apply leaves the journal and the upper layer it still needs: the next
start finishes the plan (:func:`recover`) — every step checks whether it already happened — so a change set
is never half applied and nothing is lost. Then ``calls/<auditId>.json`` records what was done, for undo.

**Undo** (:func:`undo`) plays one call's record backwards through the same steps: what it created is moved
into the history, what it replaced or deleted comes back byte for byte with its mode, a mode change is reverted.
A path changed again after the call is a conflict that stops the whole undo unless forced (and even then, what
is there goes to the history first).

This module owns the run: :class:`Applier` (an apply, an undo, each journalled) and :func:`recover`. The plan and
its journal are ``changes.plan``'s, each step ``changes.steps``'s, the no-follow file operations under them
``changes.nofollow``'s.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import posixpath
import stat
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from mcp_server_guard.changes.changeset import ROOT, ChangeSet, DirTime
from mcp_server_guard.changes.nofollow import DIR, Changed, identity, lstat_at, now_ns, parent, syncfs, unchanged_tree
from mcp_server_guard.changes.plan import (
    JOURNALS,
    Applied,
    Conflict,
    Journal,
    Op,
    Outcome,
    Plan,
    read_journal,
    steps_for,
)
from mcp_server_guard.changes.revert import UNDO_STEPS
from mcp_server_guard.changes.steps import APPLY_STEPS, Run, copy_step, place, verb
from mcp_server_guard.changes.xattrs import at, seen
from mcp_server_guard.files.history import HistoryError, HistoryStore
from mcp_server_guard.files.reading import sha256_fd
from mcp_server_guard.files.treelock import tree_lock
from mcp_server_guard.paths import within_any

__all__ = ["Applier", "UndoConflict", "now_ns", "recover"]  # now_ns: changes.nofollow's, kept importable here

log = logging.getLogger("mcp_server_guard.changes")


class UndoConflict(Exception):
    """Undo stopped before changing anything: these paths changed after the call."""

    def __init__(self, paths: list[str]) -> None:
        super().__init__(", ".join(paths))
        self.paths = paths


class Applier:
    """Applies change sets and undoes calls, through the history store and the journal. One apply at a time per
    process (they are short; the commands are what run concurrently)."""

    def __init__(self, history: HistoryStore) -> None:
        self.history = history
        # Held across a judgement and the apply it decides (Transactions): no other apply of this server comes
        # between them.
        self.lock = threading.RLock()

    @property
    def journals(self) -> Path:
        return self.history.directory / JOURNALS

    # -- apply ---------------------------------------------------------------------------------------

    def apply(
        self,
        sets: Sequence[ChangeSet],
        audit_id: str,
        started_ns: int,
        *,
        skip: frozenset[tuple[str, str]] = frozenset(),
        what: dict[str, Any] | None = None,
        live: bool = False,
        baseline: dict[str, int] | None = None,
        times: bool = False,
    ) -> Outcome:
        """Apply ``sets`` (each read from its upper layer after the call ended), leaving out ``skip`` ((root, path)
        pairs refused by the judgement: left in no tree that moves whole). ``what``: the call, for its record.

        ``live``: the command still runs (a background job's look): its files are copied, not moved, and one still
        being written waits for the next look. ``baseline`` (updated): for a job, the ctime each path had when an
        earlier apply of the same job left it; such a path is the job's own, not a conflict. ``times``: apply sets
        that hold nothing but directories' times (no journal, no record: there is nothing to undo)."""
        ops: list[Op] = []
        for changes in sets:
            ops += steps_for(changes, skip, self.history, live=live)
        if times and all(op.kind == "times" for op in ops):
            run = Run(audit_id, started_ns, dict(baseline or {}))
            for op in ops:
                with contextlib.suppress(OSError, Changed):
                    root = os.open(op.root, DIR)
                    try:
                        run_step(self.history, op, root, -1, run)
                    finally:
                        os.close(root)
            return Outcome()
        if not ops or all(op.kind == "times" for op in ops):
            return Outcome()
        left: dict[str, int] = dict(baseline or {})
        plan = Plan(audit_id, started_ns, tuple(ops), dict(what or {}))
        with self.lock:
            outcome = self._run(plan, left, done={})
        if baseline is not None:
            baseline.clear()
            baseline.update(left)
        return outcome

    def _run(
        self,
        plan: Plan,
        baseline: dict[str, int],
        done: dict[int, tuple[list[Applied], list[Conflict]]],
        journal: Journal | None = None,
        names: dict[tuple[int, int], list[str]] | None = None,
    ) -> Outcome:
        roots: dict[str, int] = {}
        uppers: dict[str, int] = {}
        outcome = Outcome()
        run = Run(plan.audit_id, plan.started_ns, baseline, names=names or {})
        run.groups = {op.record.group for op in plan.ops if op.record is not None and op.record.group}
        try:
            # Each root and upper directory opened once (not once per step: a call that made 600 files must not
            # hold 1,200 descriptors, nor leak them).
            for root in dict.fromkeys(op.root for op in plan.ops):
                roots[root] = os.open(root, DIR)
            for upper in dict.fromkeys(op.upper for op in plan.ops if op.upper):
                uppers[upper] = os.open(upper, DIR)
            for fd in uppers.values():
                syncfs(fd)  # the command's bytes are on disk before any name points at them
            if journal is None:
                journal = Journal.create(self.journals, plan.audit_id, plan.json(baseline))
            for index, op in enumerate(plan.ops):
                if index in done:
                    records, conflicts = done[index]
                    # An undo's inodes restored before a crash: later names of the same inode are linked to them.
                    if op.kind in ("restore", "swap") and op.record is not None and op.record.group and records:
                        done_at = records[-1]
                        if len(done_at.after) >= 2:
                            run.restored.setdefault(op.record.group, (done_at.path, done_at.after[:2]))
                else:
                    records, conflicts = run_step(self.history, op, roots[op.root], uppers.get(op.upper, -1), run)
                journal.done(index, records, conflicts)
                outcome.applied += records
                outcome.conflicts += conflicts
            for fd in roots.values():
                syncfs(fd)
            outcome.applied = [_settled(record, roots) for record in outcome.applied]
            outcome.marked = run.marked
            self._record(plan, outcome)
            journal.close()
            journal = None
        finally:
            for fd in [*roots.values(), *uppers.values()]:
                os.close(fd)
            if journal is not None:
                os.close(journal.fd)  # left for recover(): the next start finishes it
        return outcome

    def _record(self, plan: Plan, outcome: Outcome) -> None:
        if not any(a.action != "times" for a in outcome.applied) and not outcome.conflicts:
            return
        self.history.record_call(
            plan.audit_id,
            sorted({op.root for op in plan.ops}),
            [a.record() for a in outcome.applied],
            conflicts=[[c.path, c.what] for c in outcome.conflicts],
            **plan.what,
        )

    # -- undo ----------------------------------------------------------------------------------------

    def undo(self, audit_id: str, undo_id: str, roots: Sequence[str], *, force: bool = False) -> Outcome:
        """Put back what call ``audit_id`` changed (recorded as call ``undo_id``). Raises UndoConflict (nothing
        done) when a path changed after the call, unless ``force``; HistoryError when there is no such call."""
        manifest = self.history.manifest(audit_id)
        if manifest.get("undone_by"):
            raise HistoryError("HISTORY_NOT_FOUND", f"call {audit_id} was undone already (by {manifest['undone_by']})")
        applied_ns = int(manifest.get("applied_ns", 0))
        records = [Applied.of(r) for r in manifest.get("changes", [])]
        ops: list[Op] = []
        times: list[Op] = []
        changed: list[str] = []
        for record in reversed(records):
            root = _root_of(record.path, roots)
            if root is None:
                changed.append(f"{record.path} (outside the allowed directories now)")
                continue
            rel = posixpath.relpath(record.path, root) if record.path != root else ROOT
            if not force and not _as_left(root, rel, record, applied_ns):
                changed.append(record.path)
            if record.action == "times":
                now = _mtime(root, rel)
                time = DirTime(rel, record.old_mtime_ns, 0, now if now is not None else record.mtime_ns)
                times.append(Op("untimes", root, rel, record=record, time=time))
            elif record.action == "create":
                kind = "unmove" if record.moved_from else "remove"
                ops.append(Op(kind, root, rel, entry=self.history.new_id(), record=record))
            elif record.action == "modify":
                kind = "swap" if record.before else "remove"
                ops.append(Op(kind, root, rel, entry=self.history.new_id(), record=record))
            elif record.action == "delete" and record.before:
                ops.append(Op("restore", root, rel, record=record))
            elif record.action == "meta":
                ops.append(Op("unmeta", root, rel, record=record))
        if changed:
            raise UndoConflict(changed)
        plan = Plan(undo_id, now_ns(), tuple(ops + times), {"tool": "undo", "undoes": audit_id})
        with self.lock, tree_lock(os.stat(root).st_dev for root in {op.root for op in plan.ops}):
            outcome = self._run(plan, {}, done={}, names=_names(records, roots))
        manifest["undone_by"] = undo_id
        self.history.write_manifest(audit_id, manifest)
        return outcome


def _settled(record: Applied, roots: dict[str, int]) -> Applied:
    """A record's ``after`` as the whole run left it: a later step may have changed the same inode through another
    of its names (its mode or time), which is still what this step put there."""
    if len(record.after) < 4 or record.tree:
        return record
    root = _root_of(record.path, list(roots))
    if root is None or record.path == root:
        return record
    with (
        contextlib.suppress(Changed, OSError),
        parent(roots[root], posixpath.relpath(record.path, root)) as (
            dirfd,
            name,
        ),
    ):
        now = lstat_at(name, dirfd)
        if now is not None and (now.st_dev, now.st_ino) == record.after[:2]:
            return replace(record, after=identity(now))
    return record


def _names(records: Sequence[Applied], roots: Sequence[str]) -> dict[tuple[int, int], list[str]]:
    """The files a call's records name, by inode, with those names (as they are now): an undo that takes one name of
    a file away notes another that stays, and one that restores a name of an inode still here links it."""
    names: dict[tuple[int, int], list[str]] = {}
    for path in dict.fromkeys(p for r in records for p in (r.path, r.stays, r.link, r.moved_from) if p):
        root = _root_of(path, roots)
        if root is None or path == root:
            continue
        with contextlib.suppress(OSError, Changed):
            root_fd = os.open(root, DIR)
            try:
                with parent(root_fd, posixpath.relpath(path, root)) as (dirfd, name):
                    st = lstat_at(name, dirfd)
            finally:
                os.close(root_fd)
            if st is not None and stat.S_ISREG(st.st_mode):
                names.setdefault((st.st_dev, st.st_ino), []).append(path)
    return names


def _mtime(root: str, rel: str) -> int | None:
    """A directory's modification time now (None when it is not there), no link followed."""
    try:
        root_fd = os.open(root, DIR)
    except OSError:
        return None
    try:
        with parent(root_fd, rel) as (dirfd, name):
            st = lstat_at(name, dirfd)
            return st.st_mtime_ns if st is not None and stat.S_ISDIR(st.st_mode) else None
    except Changed:
        return None
    finally:
        os.close(root_fd)


def run_step(history: HistoryStore, op: Op, root: int, upper: int, run: Run) -> tuple[list[Applied], list[Conflict]]:
    """Run one step of an apply or an undo: what it applied, and its conflict (a step that failed, or found the path
    changed, is one)."""
    absolute = posixpath.join(op.root, op.path) if op.path != ROOT else op.root
    try:
        if op.kind in ("tree", "place"):
            return place(history, op, root, upper, run, absolute)
        if op.kind == "copy":
            return copy_step(history, op, root, upper, run, absolute)
        step = APPLY_STEPS.get(op.kind) or UNDO_STEPS.get(op.kind)
        if step is None:
            raise ValueError(op.kind)
        return step(history, op, root, run, absolute), []
    except Changed as exc:
        run.failed.add(absolute)
        return [], [Conflict(absolute, f"not {verb(op.kind)}: {exc}")]
    except (OSError, HistoryError) as exc:
        run.failed.add(absolute)
        why = exc.message if isinstance(exc, HistoryError) else exc.strerror or str(exc)
        log.warning("could not apply %s %s: %s", op.kind, absolute, why)
        return [], [Conflict(absolute, f"not {verb(op.kind)}: {why}")]


def _root_of(path: str, roots: Sequence[str]) -> str | None:
    best = None
    for root in roots:
        if (path == root or path.startswith(root.rstrip("/") + "/")) and (best is None or len(root) > len(best)):
            best = root
    return best


def _as_left(root: str, rel: str, record: Applied, applied_ns: int) -> bool:
    """Whether the path still is as the call left it."""
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
            if record.action == "meta":
                if seen(at(dirfd, name)) != record.xattrs:
                    return False
                if not stat.S_ISLNK(real.st_mode) and stat.S_IMODE(real.st_mode) != record.mode:
                    return False
                return stat.S_ISDIR(real.st_mode) or identity(real) == record.after
            if record.tree:
                try:
                    unchanged_tree(dirfd, name, applied_ns)
                except Changed:
                    return False
                return (real.st_dev, real.st_ino) == record.after[:2]
            if identity(real) == record.after:
                return True
            return bool(record.sha256) and stat.S_ISREG(real.st_mode) and _sha256(dirfd, name) == record.sha256
    except Changed:
        return record.action == "delete" and _missing_parent(root_fd, rel)
    finally:
        os.close(root_fd)


def _missing_parent(root_fd: int, rel: str) -> bool:
    """Whether a directory on the way to ``rel`` is simply not there, or not a directory (a deletion inside a deleted
    or replaced tree)."""
    parts = rel.split("/")[:-1]
    for depth in range(len(parts), 0, -1):
        with contextlib.suppress(Changed), parent(root_fd, "/".join(parts[:depth])) as (dirfd, name):
            st = lstat_at(name, dirfd)
            return st is None or not stat.S_ISDIR(st.st_mode)
    return False


def _sha256(dirfd: int, name: str) -> str:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dirfd)
    except OSError:
        return ""
    try:
        return sha256_fd(fd)
    finally:
        os.close(fd)


def recover(history: HistoryStore, roots: Sequence[str], areas: Sequence[str]) -> int:
    """At start-up: finish every apply a dead server left half done (its journal is not locked) whose every step
    lies inside ``roots`` and takes its files from inside ``areas`` (the places this server's copies can be);
    another's is left for a server of those directories. Returns how many were finished.

    Threat: a journal someone forged (the history store is hidden from every tool; this is the second wall)
    naming a root, a path or an upper directory elsewhere, to have the server place or remove files there."""
    directory = history.directory / JOURNALS
    finished = 0
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return 0
    applier = Applier(history)
    for name in names:
        if not (name.startswith("apply-") and name.endswith(".json")):
            continue
        path = directory / name
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        journal: Journal | None = Journal(path, fd)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # its server is alive and applying
            with os.fdopen(os.dup(fd), "rb") as fh:
                lines = fh.read().decode("utf-8", "surrogateescape").splitlines()
            data, done = read_journal(lines)
            if data is None:
                path.unlink(missing_ok=True)
                continue
            plan, baseline = Plan.of(data)
            outside = _outside(plan, roots, areas)
            if outside:
                log.warning("left the apply journal %s for another server: %s", path, outside)
                continue
            missing = [op.upper for op in plan.ops if op.upper and not os.path.isdir(op.upper)]
            if missing:
                log.error("cannot finish apply %s: its upper layer %s is gone", plan.audit_id, missing[0])
                path.unlink(missing_ok=True)
                continue
            journal = None  # _run closes (and removes) it once the plan is finished
            applier._run(plan, baseline, done, Journal(path, fd))
            finished += 1
            log.warning("finished the apply of call %s that a dead server left half done", plan.audit_id)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.error("cannot finish the apply journal %s: %s", path, exc)
        finally:
            if journal is not None:
                os.close(fd)
    return finished


def _outside(plan: Plan, roots: Sequence[str], areas: Sequence[str]) -> str:
    """Why a journal's plan is not this server's to finish ("" when every step is inside its places)."""
    for op in plan.ops:
        if not op.root.startswith("/") or not within_any(op.root, roots):
            return f"a step in {op.root!r}, outside {', '.join(roots)}"
        for rel in (op.path, op.change.link if op.change else "", op.change.moved_from if op.change else ""):
            if rel.startswith("/") or ".." in rel.split("/"):
                return f"a step at {rel!r}"
        if not op.path:
            return "a step with no path"
        if op.upper and not within_any(op.upper, areas):
            return f"a step taking its files from {op.upper!r}"
    return ""
