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
start finishes the plan (``changes.recovery``) — every step checks whether it already happened — so a change set
is never half applied and nothing is lost. Then ``calls/<auditId>.json`` records what was done, for undo.

**Undo** (:func:`undo`) plays one call's record backwards through the same steps: what it created is moved
into the history, what it replaced or deleted comes back byte for byte with its mode, a mode change is reverted.
A path changed again after the call is a conflict that stops the whole undo unless forced (and even then, what
is there goes to the history first).

This module owns the run: :class:`Applier` (an apply, an undo, each journalled); ``changes.recovery`` finishes a dead
server's. The plan is ``changes.plan``'s and its journal ``changes.journal``'s, an undo's steps are made by
``changes.undoing``, each step is ``changes.steps``'s, the no-follow file operations under them
``changes.nofollow``'s.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import json
import logging
import os
import posixpath
import stat
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from mcp_server_guard import faults
from mcp_server_guard.changes import name_changes
from mcp_server_guard.changes import plan as _plan
from mcp_server_guard.changes.area import needed_by, unneeded
from mcp_server_guard.changes.changeset import MAX_ENTRIES, ROOT, ChangeSet, DirTime
from mcp_server_guard.changes.escapes import note_landed
from mcp_server_guard.changes.journal import JOURNALS, Done, Journal, Replay, journal_key, journal_name
from mcp_server_guard.changes.nofollow import (
    DIR,
    Changed,
    lstat_beneath,
    now_ns,
    syncfs,
)
from mcp_server_guard.changes.pins import NAME_STEPS, adopt
from mcp_server_guard.changes.placing import place
from mcp_server_guard.changes.plan import Applied, Conflict, NotApplied, Op, Outcome, Plan, UndoConflict, steps_for
from mcp_server_guard.changes.reserve import Reserve, reserve_size
from mcp_server_guard.changes.revert import UNDO_STEPS, as_left
from mcp_server_guard.changes.revert import root_of as _root_of
from mcp_server_guard.changes.room import apply_room, undo_room
from mcp_server_guard.changes.run import Run
from mcp_server_guard.changes.settling import left_as_recorded, marked_back, settled
from mcp_server_guard.changes.steps import APPLY_STEPS, copy_step, verb
from mcp_server_guard.changes.undo_judged import Judged, undo_locked
from mcp_server_guard.changes.undoing import kept_as_before, named_files, put_back_since, reverse_ops
from mcp_server_guard.changes.what import What
from mcp_server_guard.files.history import HistoryError, HistoryStore
from mcp_server_guard.files.treelock import TreeBusy, breathe
from mcp_server_guard.files.trees import own_dirs_as_found

# now_ns: changes.nofollow's, kept importable here
__all__ = ["Applier", "NotApplied", "UndoConflict", "now_ns", "run_step"]

log = logging.getLogger("mcp_server_guard.changes")


_LANDED = 100_000  # files whose last landing a server remembers (``Applier.landed``)


class _Failed(Exception):
    """A step failed so that the run cannot be what it says (a full disk, an undo's path not back): it goes back."""


# A step failing with one of these has no per-path cause: the run cannot finish, so it goes back whole.
_FATAL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.EMFILE, errno.ENFILE, errno.ENOMEM})


class Applier:
    """Applies change sets and undoes calls, through the history store and the journal. One apply at a time per
    process (they are short; the commands are what run concurrently)."""

    def __init__(self, history: HistoryStore) -> None:
        self.history = history
        name_changes.keep_notes_in(history.directory)
        self.lock = threading.RLock()  # held across a judgement and its apply (Transactions): no apply between
        # What the steps left after a breath (rt83 F3), and going back (rt84 F1), may not do: set under ``lock``.
        self.stale: Callable[[Sequence[Op]], str] = _plan.not_stale
        self.restores: Callable[[Sequence[Op]], Mapping[tuple[str, str], str]] = _plan.nothing_refused
        # Absolute path -> (dev, ino, mtime_ns, size) of the file this server last landed there: a later rewrite of
        # it replaces the tools' own output, not work git has no copy of (``effects.judge``: only copies).
        self.landed: dict[str, tuple[int, ...]] = {}

    @property
    def journals(self) -> Path:
        return self.history.directory / JOURNALS

    @functools.cached_property
    def key(self) -> bytes:
        """What seals this history's journals (``changes.journal.journal_key``)."""
        return journal_key(self.history.directory)

    # -- apply ---------------------------------------------------------------------------------------

    def apply(
        self,
        sets: Sequence[ChangeSet],
        audit_id: str,
        started_ns: int,
        *,
        skip: frozenset[tuple[str, str]] = frozenset(),
        what: What | None = None,
        live: bool = False,
        baseline: dict[str, int] | None = None,
        times: bool = False,
    ) -> Outcome:
        """Apply ``sets`` (each read from its upper layer after the call ended), leaving out ``skip`` ((root, path)
        pairs refused by the judgement: left in no tree that moves whole). ``what``: the call, for its record.

        ``live``: the command still runs (a background job's look): its files are copied, not moved, and one still
        being written waits for the next look. ``baseline`` (updated): for a job, the ctime each path had when an
        earlier apply of the same job left it; such a path is the job's own, not a conflict. ``times``: apply sets
        that hold nothing but directories' times (no journal, no record: there is nothing to undo).

        Raises NotApplied when the change set cannot land whole: more paths than a change set may list, previous
        contents that do not fit the history (both before anything changes), or a step that failed for want of
        space (everything done is put back)."""
        if any(changes.incomplete for changes in sets):
            raise NotApplied(f"it changed more than {MAX_ENTRIES:,} paths, more than one call may change")
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
        if not ops or (
            all(op.kind == "times" for op in ops)
            and not any(op.time is not None and op.time.set_on_purpose(started_ns) for op in ops)
        ):
            return Outcome()
        what = what or What()
        why = apply_room(self.history, sets, skip, ops, what, audit_id)
        if why:
            raise NotApplied(why)
        left: dict[str, int] = dict(baseline or {})
        # What the project's own attributes are: journalled with the plan, a run finished after a crash lands them
        # the same.
        carried = tuple(sorted({pair for changes in sets for pair in changes.carried}))
        plan = Plan(audit_id, started_ns, tuple(ops), replace(what, carried=carried) if carried else what)
        _plan.note_planted(sets, skip)
        with self.lock:
            outcome = self._said(plan, left, None)
        if baseline is not None:
            baseline.clear()
            baseline.update(left)
        return outcome

    def _run(
        self,
        plan: Plan,
        baseline: dict[str, int],
        done: Done,
        journal: Journal | None = None,
        names: dict[tuple[int, int], list[str]] | None = None,
        *,
        replay: Replay | None = None,
    ) -> Outcome:
        """Run ``plan`` (its steps in ``done`` ran before a crash), journalled. An undo's plan (``what`` names the
        call it undoes) goes back whole when one of its steps fails, an apply's when one fails for want of space
        (NotApplied). ``replay``: the journal of a dead server's run, being finished (or gone back)."""
        roots: dict[str, int] = {}
        uppers: dict[str, int] = {}
        needed: list[Path] = []
        applied: list[Applied] = []
        conflicts: list[Conflict] = []
        undo = plan.what.undoes or ""
        if names is None and replay is not None and undo:  # a dead server's undo: the names its records' files have
            names = named_files(
                [op.record for op in plan.ops if op.record is not None], sorted({op.root for op in plan.ops})
            )
        run = Run(plan.audit_id, plan.started_ns, baseline, names=names or {}, replay=replay is not None)
        run.carried = frozenset(plan.what.carried)
        run.groups = {op.record.group for op in plan.ops if op.record is not None and op.record.group}
        back = replay.back if replay is not None else None
        kept = Outcome()  # what going back leaves in force: refused where it would land (``held_back``)
        why = replay.why if replay is not None else ""
        try:
            with self.history.running(plan.audit_id):
                # Each root and upper directory opened once (not once per step: a call that made 600 files must
                # not hold 1,200 descriptors, nor leak them).
                for root in dict.fromkeys(op.root for op in plan.ops):
                    roots[root] = os.open(root, DIR)
                for upper in dict.fromkeys(op.upper for op in plan.ops if op.upper):
                    with contextlib.suppress(FileNotFoundError):  # gone: its steps were done, or went back
                        uppers[upper] = os.open(upper, DIR)
                if journal is None:  # (no other server's start removes these copies while the journal needs them)
                    needed = needed_by(uppers, self.journals / journal_name(plan.audit_id))
                for fd in uppers.values():
                    syncfs(fd)  # the command's bytes are on disk before any name points at them
                if journal is None:
                    journal, reserve = self._journal(plan, baseline)
                else:
                    reserve = Reserve.left(self.journals, plan.audit_id)
                # The user's directories with no permission let in for the steps get their modes back before the
                # call is recorded: its time is later than theirs (an undo's check).
                with own_dirs_as_found(name_changes.note):
                    if back is None:
                        steps: list[tuple[Op, list[Applied]]] = []
                        try:
                            self._steps(plan.ops, done, journal, run, roots, uppers, (applied, conflicts), steps,
                                        fail=bool(undo))  # fmt: skip
                        except _Failed as exc:
                            why = str(exc)
                            back, kept = _plan.held_back(self._reverse(plan, steps, list(roots)), self.restores)
                            faults.point("rollback")
                            try:
                                journal.rollback(back, why)  # (in the journal's own room: Journal.create)
                            except OSError:
                                reserve.give_back()
                                # Never going back unjournalled (red team 75 F1: the next start then finished the
                                # plan forward over steps already put back): raised, the journal as the tree is.
                                journal.rollback(back, why)
                            reserve.give_back()  # room to go back
                    if back is not None:
                        # Going back: what could not be put back stays recorded (an undo finds it), and is said. The
                        # run's own paths are looked at too: a name a failed step left in place is still a name of its
                        # file.
                        touched = [posixpath.join(op.root, op.path) if op.path != ROOT else op.root for op in plan.ops]
                        left = self._back(back, replay.back_done if replay is not None else {}, journal, roots, touched)
                        applied, conflicts = [*left.applied, *kept.applied], [*left.conflicts, *kept.conflicts]
                    applied = [settled(record, roots) for record in applied]  # (in directories still let in)
                for entry_id in run.forget_later:
                    self.history.forget(entry_id)
                for fd in roots.values():
                    syncfs(fd)
                outcome = Outcome(applied=applied, conflicts=conflicts)
                outcome = replace(outcome, marked=run.marked + (marked_back(outcome, roots) if undo else []))
                reserve.give_back()  # room for the record
                note_landed(self.history.directory, outcome.marked)  # every server's escape layer takes it up
                faults.point("record")
                outcome = replace(outcome, recorded=self._record(plan, outcome))
                if undo and back is None:
                    self._mark_undone(undo, plan.audit_id)
                faults.point("close")
                journal.close()
                journal = None
                unneeded(needed)
        finally:
            for fd in [*roots.values(), *uppers.values()]:
                os.close(fd)
            if journal is not None:
                os.close(journal.fd)  # left for recover(): the next start finishes it
        if back is not None:
            raise NotApplied(why, conflicts)
        return outcome

    def _steps(
        self,
        ops: Sequence[Op],
        done: Done,
        journal: Journal,
        run: Run,
        roots: dict[str, int],
        uppers: dict[str, int],
        found: tuple[list[Applied], list[Conflict]],
        steps: list[tuple[Op, list[Applied]]],
        *,
        fail: bool = False,
        back: bool = False,
    ) -> None:
        """Run ``ops`` in order, each journalled once done (``steps``: each op run, with what it applied; ``found``
        gets every record and conflict). A step
        that fails for want of space — or any that fails, with ``fail`` (an undo) — stops the run (_Failed)."""
        for index, op in enumerate(ops):
            # (A directory's time put back is put back again: steps going back that failed before, done now, moved it.)
            if index in done and not (back and op.kind == "untimes"):
                records, conflicts = done[index]
                for record in records:
                    if len(record.after) >= 2:
                        run.placed[record.path] = (record.after[0], record.after[1])
                    if len(record.group) == 2 and record.action in ("modify", "delete"):
                        run.ours.add((record.group[0], record.group[1]))  # its names changed by this run
                    if record.kind == "file" and len(record.after) >= 2 and left_as_recorded(op, record):
                        # A file this run linked, moved, re-moded or placed: its ctime is ours (red team 11 F2)
                        run.ours.add((record.after[0], record.after[1]))
                if op.kind in ("adopt", "pin"):  # a name made of a real file (no record): the file it names now
                    made = lstat_beneath(op.upper, op.path) if op.kind == "adopt" and op.upper else None
                    made = made or lstat_beneath(op.root, op.path)
                    if made is not None and stat.S_ISREG(made.st_mode):
                        run.ours.add((made.st_dev, made.st_ino))
                # An undo's inodes restored before a crash: later names of the same inode are linked to them.
                if op.kind in ("restore", "swap") and op.record is not None and op.record.group and records:
                    done_at = records[-1]
                    if len(done_at.after) >= 2:
                        run.restored.setdefault(op.record.group, (done_at.path, done_at.after[:2]))
                if op.kind in ("restore", "swap") and op.record is not None and op.record.tree:
                    _restored_in_tree(self.history, op, run)
            else:
                faults.point(f"{'back' if back else 'step'} {index} {op.kind} {op.path}")
                if op.upper and op.upper not in uppers and not back:
                    # A dead server's run finished after its copies went (red team 69 F1): its remaining steps
                    # have nothing to place; the run goes back to all old rather than call a half apply finished.
                    raise _Failed(f"the command's copy of {op.path} is gone: its changes cannot be finished")
                if run.replay and not back and not run.rechecked:  # a dead server's run, finished at a start: its
                    run.rechecked = True  # steps left judged against the tree now (red team 84 F3)
                    if why := self.stale(ops[index:]):
                        raise _Failed(why)
                records, conflicts = run_step(self.history, op, roots[op.root], uppers.get(op.upper, -1), run)
                if not back and (run.fatal or (fail and conflicts)):
                    # The promise, not the tree, is at stake: an undo that says success with a path not back, an
                    # apply half landed on a full disk. The failed step changed nothing (it keeps before it moves),
                    # or what it kept is in its records, gone back on with the rest (red team 57 F4).
                    if records:
                        steps.append((op, records))
                        with contextlib.suppress(OSError):
                            journal.done(index, records, conflicts, back=back)
                    raise _Failed(run.fatal or conflicts[0].what)
                faults.point(f"{'back' if back else 'done'} {index}")
            steps.append((op, records))
            # A step going back that did nothing (no room to keep what it takes away) is not journalled: the next
            # run of this journal tries it again rather than take it for done (red team 75's walk).
            try:
                if not (back and conflicts and not records):
                    journal.done(index, records, conflicts, back=back)
            except OSError as exc:
                if not back:  # (going back goes on: each step checks what is there)
                    raise _Failed(f"its journal could not be written ({exc.strerror})") from exc
            found[0].extend(records)
            found[1].extend(conflicts)
            try:
                # A long run lets other servers' writers in now and then; what one did to the steps left is judged.
                if breathe() and not back and not run.replay and (why := self.stale(ops[index + 1 :])):
                    raise _Failed(why)
            except TreeBusy as exc:
                if back:
                    raise
                raise _Failed(str(exc)) from None

    def _journal(self, plan: Plan, baseline: dict[str, int]) -> tuple[Journal, Reserve]:
        """A new run's journal, and the room it keeps for its own writes (``changes.reserve``). NotApplied, with
        nothing changed, when the disk has not that room."""
        try:
            journal = Journal.create(self.journals, plan, baseline, self.key)
        except FileExistsError as exc:  # (red team 75 F2: a job's later look over an earlier look's kept journal)
            raise NotApplied(f"an earlier part of call {plan.audit_id} is unfinished (its journal is kept): the next "
                             "start finishes it or goes back over it", kept=True) from exc  # fmt: skip
        except OSError as exc:
            raise NotApplied(f"its journal could not be written ({exc.strerror})") from exc
        try:
            return journal, Reserve.take(self.journals, plan.audit_id, reserve_size(journal.size, len(plan.ops)))
        except OSError as exc:
            journal.close()
            raise NotApplied(f"the history's disk has no room to apply it safely ({exc.strerror})") from exc

    def _reverse(self, plan: Plan, steps: Sequence[tuple[Op, list[Applied]]], roots: Sequence[str]) -> Plan:
        """The plan that puts back what ``steps`` of ``plan`` did, last first. A pre-image an undo had put back goes
        into the history again under its own id, for the call it belongs to (whose record still names it)."""
        ops: list[Op] = []
        for op, records in reversed(steps):
            back, _changed = reverse_ops(self.history, records, roots, 0, force=True)
            if op.kind in ("restore", "swap") and op.record is not None and op.record.before:
                back = [replace(b, entry=op.record.before) if b.kind in ("remove", "swap") else b for b in back]
            ops += back
        # Directories whose time the run had not put as the command left it yet: back as they were before the run,
        # as undo puts them (the times a done step moved; a rollback is "all old" with them too).
        timed = {(op.root, op.path) for op, _records in steps if op.kind == "times"}
        ops += [Op("untimes", op.root, op.path, time=DirTime(op.path, op.time.old_mtime_ns, 0, op.time.old_mtime_ns))
                for op in plan.ops if op.kind == "times" and op.time is not None and op.time.ctime_ns != -1
                and (op.root, op.path) not in timed]  # fmt: skip
        times = [op for op in ops if op.kind == "untimes"]
        return Plan(plan.what.undoes or plan.audit_id, now_ns(),
                    tuple([op for op in ops if op.kind != "untimes"] + times), What(back=plan.audit_id))  # fmt: skip

    def _back(
        self, back: Plan, done: Done, journal: Journal, roots: dict[str, int], touched: Sequence[str] = ()
    ) -> Outcome:
        """Go back (``back``: made by _reverse; ``done``: its steps done before a crash). Returns what is left: the
        records whose reversal failed (still in force: recorded for undo) and why each failed."""
        for root in dict.fromkeys(op.root for op in back.ops):
            if root not in roots:
                roots[root] = os.open(root, DIR)
        records = [op.record for op in back.ops if op.record is not None]
        run = Run(
            back.audit_id, back.started_ns, {}, names=named_files(records, list(roots), touched), replay=bool(done)
        )
        run.groups = {r.group for r in records if r.group}
        steps: list[tuple[Op, list[Applied]]] = []
        went: tuple[list[Applied], list[Conflict]] = ([], [])
        self._steps(back.ops, done, journal, run, roots, {}, went, steps, back=True)
        applied: list[Applied] = []
        conflicts: list[Conflict] = []
        for op, _records in steps:
            failed = [c for c in went[1] if op.record is not None and c.path == op.record.path]
            if failed and op.record is not None:
                applied.append(op.record)
                conflicts += failed
        return Outcome(applied=applied, conflicts=conflicts)

    def _record(self, plan: Plan, outcome: Outcome) -> bool:
        """The call's record (what its undo plays back). A call applied in parts (a background job, look by look)
        has one record of every part, in order: its one undo puts back all of them, newest first. A part is known
        by its plan (a replay after a crash records the same part once). Returns whether the call has a record."""
        timed = any(a.action == "times" and a.mtime_ns < plan.started_ns != 0 for a in outcome.applied)
        # Most calls apply once: no record yet, and no look into the evicted calls' list that a missing one costs.
        kept = (self.history.calls.directory / f"{plan.audit_id}.json").exists()
        if not any(a.action != "times" for a in outcome.applied) and not outcome.conflicts and not timed:
            return kept  # nothing to undo (directories' times the command's entries moved on) but parts
        # Content this server wrote, not a name it moved or linked there, nor a real file the command renamed (its
        # copy-up carries overlayfs's origin): the user's work all the same.
        theirs = {posixpath.join(o.root, o.path) for o in plan.ops if o.change is not None and o.change.origin}
        for applied in outcome.applied:
            if (
                applied.kind == "file"
                and applied.after
                and applied.action in ("create", "modify")
                and not (applied.moved_from or applied.link or (applied.action == "create" and applied.path in theirs))
            ):
                self.landed.pop(applied.path, None)
                self.landed[applied.path] = applied.after
        while len(self.landed) > _LANDED:
            del self.landed[next(iter(self.landed))]  # the oldest first
        part = hashlib.sha256(json.dumps([op.plan() for op in plan.ops], sort_keys=True).encode()).hexdigest()[:16]
        changes, conflicts, parts = (
            [a.record() for a in outcome.applied],
            [[c.path, c.what] for c in outcome.conflicts],
            [part],
        )
        roots, what = {op.root for op in plan.ops}, plan.what
        with contextlib.suppress(HistoryError):
            earlier = self.history.calls.read(plan.audit_id) if kept else {}
            if part in earlier.get("parts", []):
                return True  # recorded before a crash cut the run's end: this part is in it already
            if not earlier.get("undone_by"):
                changes = [*earlier.get("changes", []), *changes]
                conflicts = [*earlier.get("conflicts", []), *conflicts]
                parts = [*earlier.get("parts", []), part]
                roots |= set(earlier.get("roots", []))
                if only := {*earlier.get("only_copies", []), *what.only_copies}:
                    what = replace(what, only_copies=tuple(sorted(only)))  # what every part kept the one copy of
        self.history.calls.record(plan.audit_id, sorted(roots), changes, conflicts=conflicts,
                                  what={"parts": parts, **what.json()})  # fmt: skip
        return True

    def _mark_undone(self, audit_id: str, undo_id: str) -> None:
        """Call ``audit_id`` is undone by ``undo_id``; a call it undid (this is a redo) is in force again."""
        with contextlib.suppress(HistoryError):
            manifest = self.history.calls.read(audit_id)
            manifest["undone_by"] = undo_id
            self.history.calls.write(audit_id, manifest)
            undid = str(manifest.get("undoes", ""))
            if undid:
                earlier = self.history.calls.read(undid)
                if earlier.get("undone_by") == audit_id:
                    earlier.pop("undone_by")
                    self.history.calls.write(undid, earlier)

    # -- undo ----------------------------------------------------------------------------------------

    @own_dirs_as_found(name_changes.note)  # (the checks look into the user's directories with no permission too)
    def undo(self, audit_id: str, undo_id: str, roots: Sequence[str], *, force: bool = False,
             judged: Judged | None = None) -> Outcome:  # fmt: skip
        """Put back what call ``audit_id`` changed (as call ``undo_id``), exactly or not at all. Raises UndoConflict
        (nothing done) when a path changed after the call, unless ``force``; UndoRefused from ``judged`` (under the
        tree lock); HistoryError (no such call, or a pre-image gone); NotApplied (no room, or a step failed)."""
        manifest = self.history.calls.read(audit_id)
        if manifest.get("undone_by"):
            raise HistoryError("HISTORY_NOT_FOUND", f"call {audit_id} was undone already (by {manifest['undone_by']})")
        records = [Applied.of(r) for r in manifest.get("changes", [])]
        if manifest.get("pending"):
            # A write killed around its rename: undone where the name holds what it wrote; elsewhere it never landed.
            landed = [r for r in records if r.action != "times" and (root := _root_of(r.path, roots)) is not None
                      and r.path != root and as_left(root, posixpath.relpath(r.path, root), r, 0)]  # fmt: skip
            if not landed:
                raise HistoryError("HISTORY_NOT_FOUND", f"call {audit_id} was cut off before it changed anything")
            records = [*landed, *(r for r in records if r.action == "times")]  # (its directory's time: red team 115 F3)
        applied_ns = int(manifest.get("applied_ns", 0))
        since = put_back_since(self.history, audit_id, applied_ns, [r.path for r in records if r.action != "times"])
        back = int(manifest.get("put_back_ns", 0))  # (an undo of it failed, and put back all it had done, then)
        since = {path: max(since.get(path, applied_ns), back) for path in since.keys() | {r.path for r in records}}
        ops, changed = reverse_ops(
            self.history, records, roots, applied_ns, force=False, since=since, audit_id=audit_id
        )
        if changed and not force:
            raise UndoConflict(changed)
        if changed:  # forced over later changes (a person's edits, maybe): the history keeps their only copy
            ops, _ = reverse_ops(self.history, records, roots, applied_ns, force=True, since=since)
            # A path the call deleted that someone made again since: theirs is kept, the call's pre-image put back.
            ops = [replace(op, kind="swap", entry=self.history.new_id()) if op.kind == "restore" and op.record
                   is not None and op.record.path in changed else op for op in ops]  # fmt: skip
        if manifest.get("undoes"):
            ops = kept_as_before(self.history, ops, str(manifest["undoes"]))
        missing = [f"{op.record.path}: {why}" for op in ops if op.record is not None and op.kind in ("restore", "swap")
                   for why in [self.history.check(op.record.before)] if why]  # fmt: skip
        if missing:
            raise HistoryError("HISTORY_BROKEN", "what it replaced cannot be put back: " + "; ".join(missing[:5]))
        why = undo_room(self.history, ops)
        if why:
            raise NotApplied(why)
        plan = Plan(undo_id, now_ns(), tuple(ops), What(tool="undo", undoes=audit_id, only_copies=tuple(changed)))
        devices = [os.stat(root).st_dev for root in {op.root for op in plan.ops}]
        # Judged without the tree lock, the lock then held with that judgement still true (rt85 F4; rounds as a
        # change set's): raises UndoRefused, nothing done. Its steps left, and going back, are judged too.
        with undo_locked(judged, plan.ops, devices, self.lock):
            if judged is not None:
                self.stale, self.restores = judged.left, judged.restores
            try:
                return self._said(plan, {}, named_files(records, roots))
            except NotApplied as exc:  # (put back whole, as checked: the ctimes its renames moved count from now)
                if not (changed or exc.left or exc.kept):
                    with contextlib.suppress(HistoryError, OSError):
                        self.history.calls.write(audit_id, {**manifest, "put_back_ns": now_ns()}, durable=False)
                raise
            finally:
                self.stale, self.restores = _plan.not_stale, _plan.nothing_refused

    def _said(self, plan: Plan, baseline: dict[str, int], names: dict[tuple[int, int], list[str]] | None) -> Outcome:
        """A new run of ``plan``, whatever the disk does under its own bookkeeping: NotApplied saying what is left
        (red team 73: an OSError escaped a run half done, and the server answered INTERNAL_ERROR)."""
        try:
            return self._run(plan, baseline, done={}, names=names)
        except OSError as exc:
            if self.unfinished(plan.audit_id):
                raise NotApplied(f"it could not be finished ({exc.strerror or exc})", kept=True) from exc
            raise NotApplied(f"it could not be applied ({exc.strerror or exc})") from exc

    def unfinished(self, audit_id: str) -> bool:
        """Whether a run of call ``audit_id`` left its journal (killed, or stopped by its disk): its copy is needed."""
        return (self.journals / journal_name(audit_id)).exists()


def run_step(history: HistoryStore, op: Op, root: int, upper: int, run: Run) -> tuple[list[Applied], list[Conflict]]:
    """Run one step of an apply or an undo: what it applied, and its conflict (a step that failed, or found the path
    changed, is one)."""
    absolute = posixpath.join(op.root, op.path) if op.path != ROOT else op.root
    try:
        if op.kind in ("tree", "place"):
            return place(history, op, root, upper, run, absolute)
        if op.kind == "copy":
            return copy_step(history, op, root, upper, run, absolute)
        if op.kind == "adopt":
            return adopt(history, op, root, upper, run, absolute), []
        step = APPLY_STEPS.get(op.kind) or NAME_STEPS.get(op.kind) or UNDO_STEPS.get(op.kind)
        if step is None:
            raise ValueError(op.kind)
        return step(history, op, root, run, absolute), []
    except Changed as exc:
        run.failed.add(absolute)
        return exc.done, [Conflict(absolute, f"not {verb(op.kind)}: {exc}", skipped=True)]
    except (OSError, HistoryError) as exc:
        run.failed.add(absolute)
        why = exc.message if isinstance(exc, HistoryError) else exc.strerror or str(exc)
        if isinstance(exc, OSError) and exc.errno in _FATAL:
            run.fatal = f"{absolute}: {why}"
        log.warning("could not apply %s %s: %s", op.kind, absolute, why)
        return [], [Conflict(absolute, f"not {verb(op.kind)}: {why}", skipped=True)]


def _restored_in_tree(history: HistoryStore, op: Op, run: Run) -> None:
    """An undo's step journalled before a crash that put back a tree whose files had other names when it was kept:
    each such file, as it is now (made a name of another again, or the copy), is what the names of its inode this
    undo puts back later are made names of (with the history on another file system every name of the file may
    be in the history: which copy holds it went with the killed process). Its entry is let go when the run ends."""
    assert op.record is not None
    links = history.tree_links(op.record.before)
    if links:
        run.forget_later.append(op.record.before)
    for rel, dev, ino in links:
        now = lstat_beneath(op.root, posixpath.join(op.path, rel))
        if now is not None and stat.S_ISREG(now.st_mode):
            run.restored.setdefault((dev, ino), (posixpath.join(op.record.path, rel), (now.st_dev, now.st_ino)))
