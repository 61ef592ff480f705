"""One call's transaction: after its command ends, its copy is read, judged, and applied, held or dropped.

``Transactions.settle`` is what shell_exec calls once every process of a call is gone:

1. read each root's upper layer (:mod:`changes.upper`); nothing changed: done (``unchanged``);
2. judge it (:mod:`changes.effects`): refused paths are left out whatever happens;
3. when the judgement asks, ask the person now (a 2025-era client, through elicitation), or hold the change set
   for a later call to apply or drop (a 2026-07-28 client cannot be asked mid-call: ``held``), or, with a client
   that cannot ask at all, apply nothing (``declined``);
4. apply it through the one guarded writer (:mod:`changes.apply`), and remove the copy.

Held change sets stay where they are (in this server's part of the area), bounded in number and bytes and
dropped after ``held_seconds`` (``changes.held``); ``apply_held`` judges one again against the tree as it is then
and applies it. What the result says became of the changes is ``changes.results``'s.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import logging
import os
import stat
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from mcp_server_guard import audit
from mcp_server_guard.changes.area import AREA_IN_ROOT, CopyArea, CopyRemover
from mcp_server_guard.changes.changeset import (
    COUNTED_FILES,
    COUNTED_UNBACKED,
    MAX_ENTRIES,
    NO_RENAMES,
    ChangeSet,
    Renamed,
    looked_under,
    mounted_note,
)
from mcp_server_guard.changes.escapes import MARKS, Escapes
from mcp_server_guard.changes.held import Held, HeldSets
from mcp_server_guard.changes.name_changes import keep_notes_in
from mcp_server_guard.changes.results import Settled, described, finished, left_out, not_applied
from mcp_server_guard.changes.unrelated import declared, unrelated_to
from mcp_server_guard.changes.upper import judged_copy, read_upper
from mcp_server_guard.changes.what import What
from mcp_server_guard.changes.xattrs import root_left_at, seen
from mcp_server_guard.files.history import HistoryStore
from mcp_server_guard.files.treelock import TreeBusy, fresh, tree_lock
from mcp_server_guard.files.trees import remove_tree
from mcp_server_guard.paths import printable, within_set
from mcp_server_guard.policy import EffectsPolicy
from mcp_server_guard.protected import Protection

if TYPE_CHECKING:
    from mcp_server_guard.changes.apply import Applier
    from mcp_server_guard.changes.effects import Judgement
    from mcp_server_guard.changes.plan import Op, Outcome

__all__ = ["Transactions"]

_HUMAN = "human:elicitation"  # who decided, in the audit record (shell.approval's APPROVED_BY)
log = logging.getLogger("mcp_server_guard.changes")

# What a question to the person returns: True apply, False do not, None nobody answered.
Ask = Callable[[str], Awaitable[bool | None]]


@contextlib.contextmanager
def _tree_locked(sets: Sequence[ChangeSet]) -> Iterator[None]:
    """The tree lock of the file systems ``sets`` lie on (see ``files.treelock``), said to write what ``sets`` change
    (``unrelated.declared``: not the directories' times, which no judgement reads); busy past its wait: _Unjudged."""
    said = declared(sets)
    try:
        with tree_lock((os.stat(changes.root).st_dev for changes in sets), wrote=lambda: said):
            yield
    except TreeBusy as exc:
        raise _Unjudged(str(exc)) from None


def _why(exc: BaseException) -> str:
    return printable(exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc))


class _Unjudged(Exception):
    """A change set that could not be judged (nothing of it is applied)."""


class Transactions:
    """Settles the transactions of one server's calls."""

    def __init__(
        self,
        area: CopyArea,
        history: HistoryStore,
        protection: Protection,
        policy: EffectsPolicy,
        display: Callable[[str], str] = lambda path: path,
    ) -> None:
        self.area, self.history, self.protection, self.policy = area, history, protection, policy
        # The applier, and the judging and applying modules, come with the first change to judge (``applier``): a
        # session of commands that change nothing never loads them (issue 44). What its applies note goes to the
        # history from the start, as its own start would say.
        keep_notes_in(history.directory)
        self._applier: Applier | None = None
        self._making = threading.Lock()
        # an absolute path as the model (and a person) sees it
        self.display: Callable[[str], str] = lambda path: printable(display(path))
        self._held = HeldSets(policy, self.discard)  # change sets waiting for a yes in a later call
        self._remover = CopyRemover(self.discard)
        # the project's own overlay attributes, shown as they are: the walk for them starts now (with the server)
        self.escapes = Escapes(area.overlays(), history.directory / MARKS)
        self.escapes.start()

    @property
    def applier(self) -> Applier:
        """The one applier of this server's changes (made once, by the first call that needs it)."""
        with self._making:
            if self._applier is None:
                from mcp_server_guard.changes.apply import Applier  # noqa: PLC0415 - with the first change (issue 44)

                self._applier = Applier(self.history)
            return self._applier

    # -- reading and judging ---------------------------------------------------------------------

    def _upper(self, name: str, index: int, part: str) -> str:
        return os.path.join(part, name, f"u{index}")

    def read(
        self,
        name: str,
        started_ns: int = 0,
        moved: Renamed = NO_RENAMES,
        baseline: dict[str, int] | None = None,
    ) -> list[ChangeSet]:
        """Every root's change set of the copy ``name`` (every process of its call must be gone); ``started_ns``: when
        the command started (what changed in the real tree after that is someone else's); ``moved``: see ``settle``;
        ``baseline``: a job's (see ``settle``)."""
        sets: list[ChangeSet] = []
        for index, (root, part) in enumerate(self.area.overlays()):
            upper = self._upper(name, index, part)
            skip = frozenset({AREA_IN_ROOT}) if any(p.in_root == root for p in self.area.parts) else frozenset()
            fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                mounted = mounted_note(os.path.join(part, name, f"m{index}"))
                changes = read_upper(upper, fd, root, skip, mounted, started_ns=started_ns,
                                     carried=self.escapes.data(root), moved=moved, escaped=self.escapes.escaped(root),
                                     looked=looked_under(baseline, root))  # fmt: skip
            finally:
                os.close(fd)
            if changes.changes or changes.incomplete or changes.times:
                sets.append(changes)
        return sets

    def judge(
        self, sets: Sequence[ChangeSet], roots: Sequence[str], job: dict[str, int] | None = None, audit_id: str = ""
    ) -> Judgement:
        """``job``: a job's baseline, which keeps what its looks counted (``counted``)."""
        return self._evictions(sets, self._effects(sets, roots, job), audit_id)

    def _effects(self, sets: Sequence[ChangeSet], roots: Sequence[str], job: dict[str, int] | None) -> Judgement:
        earlier = (job or {}).get(COUNTED_FILES, 0), (job or {}).get(COUNTED_UNBACKED, 0)
        # (what this server landed: a copy taken at once, as another call's apply may be adding to it; and what the
        # history's records say a server of it landed, this one before a restart too: rt85 F3)
        landed = collections.ChainMap(dict(self.applier.landed), self.applier.history.calls.landed())
        from mcp_server_guard.changes.effects import judge  # noqa: PLC0415 - with the first change (issue 44)

        return judge(sets, self.protection, self.policy, roots, earlier, landed)

    def _evictions(self, sets: Sequence[ChangeSet], judgement: Judgement, audit_id: str) -> Judgement:
        """Threat: a flood of rewrites in a build directory, never asked, pushing out of the history the one copy
        of drafts an earlier call overwrote: what this apply would evict of such copies is asked
        (``HistoryStore.evicting``). Under the applier's lock: the history as the apply will find it."""
        from mcp_server_guard.changes.room import kept  # noqa: PLC0415 - with the first change (issue 44)

        if self.policy.ask_uncommitted and (keeps := kept(sets, judgement))[0]:  # keeps nothing: pushes out nothing
            judgement = judgement.evicting(self.applier.history.evicting(*keeps, audit_id))
        return judgement

    @contextlib.contextmanager
    def _judged(
        self, sets: Sequence[ChangeSet], roots: Sequence[str], job: dict[str, int] | None, audit_id: str
    ) -> Iterator[Judgement]:
        """Judge ``sets`` and hold the applier's lock and the tree lock while that judgement is still true
        (``treelock.fresh``: judged without the tree lock, again if another writer took it meanwhile).

        Threat: a judgement that is stale by the time its apply runs. Another call's changes, applied while a
        person was being asked (or while this one was judged), can make a directory a git dir; a config this
        judgement let through would then land in it. Threat: a huge change set judged for many seconds under the
        tree lock, every other server's call and write waiting past its bound (red team 82 F2: 190,000 files,
        file_write's FILE_BUSY). The tree lock busy past its wait: _Unjudged."""
        devices = [os.stat(changes.root).st_dev for changes in sets]
        said, unrelated = declared(sets), unrelated_to(sets, self.protection, roots)  # (other writers: item 7)
        try:
            with fresh(devices, lambda: self._tried(sets, roots, job), self.applier.lock, lambda: said,
                       unrelated) as judged:  # fmt: skip
                yield self._final(sets, judged, audit_id)
        except TreeBusy as exc:
            raise _Unjudged(str(exc)) from None

    def _tried(
        self, sets: Sequence[ChangeSet], roots: Sequence[str], job: dict[str, int] | None
    ) -> Judgement | Exception:
        try:
            return self._effects(sets, roots, job)
        except (OSError, RecursionError, ValueError) as exc:
            return exc  # (a writer changing what was read meanwhile: judged again; else said)

    def _final(self, sets: Sequence[ChangeSet], judged: Judgement | Exception, audit_id: str) -> Judgement:
        if isinstance(judged, Exception):
            raise _Unjudged(_why(judged)) from judged
        return self._evictions(sets, judged, audit_id)

    def _untouched(self, name: str) -> bool:
        """Whether the copy holds no change at all (one directory read per root); then it is removed later, by
        the remover (see ``area.CopyRemover``), never on the event loop nor on the call's way to its result."""
        try:
            for index, (root, part) in enumerate(self.area.overlays()):
                upper = self._upper(name, index, part)
                with os.scandir(upper) as entries:
                    if next(entries, None) is not None:
                        return False
                # The root's own mode or time (``touch -d 2001-01-01 .``): a change with no entry to show it.
                mounted, own = mounted_note(os.path.join(part, name, f"m{index}")), os.lstat(upper)
                if mounted is not None and (stat.S_IMODE(own.st_mode), own.st_mtime_ns) != mounted[:2]:
                    return False
                if mounted is not None and tuple(sorted(seen(upper))) != mounted.xattrs:
                    return False  # (``setfattr -n user.tag -v 1 .``)
                if root_left_at(upper, root):
                    return False  # (``setfacl -b .``, ``setfattr -n user.overlay.x -v 1 .``: not applied, said)
        except OSError:
            return False  # something unexpected: the thorough way decides
        self._remover.put(name)
        return True

    def _landed(self, sets: Sequence[ChangeSet], outcome: Outcome) -> None:
        """What an apply landed with overlayfs's attribute names, or took them from: the escape layer follows."""
        for changes in sets:
            prefix = changes.root.rstrip("/") + "/"
            escaped = self.escapes.escaped(changes.root)
            paths = {p[len(prefix) :] for p in outcome.marked if p.startswith(prefix)}
            paths |= {a.path[len(prefix) :] for a in outcome.applied if a.path[len(prefix) :] in escaped}
            if paths:
                self.escapes.note(changes.root, sorted(paths))

    def _times_only(self, name: str, sets: Sequence[ChangeSet], audit_id: str, started_ns: int) -> None:
        try:
            if sets:
                with self.applier.lock, _tree_locked(sets):
                    self.applier.apply(sets, audit_id, started_ns, times=True)
        except (_Unjudged, OSError) as exc:
            log.info("the times of the directories of call %s were left as they are: %s", audit_id, _why(exc))
        finally:
            self.discard(name)

    def discard(self, name: str) -> None:
        """Remove a copy (its command's changes are dropped, or applied already)."""
        for part in {part for _root, part in self.area.overlays()}:
            with contextlib.suppress(OSError):
                remove_tree(Path(part) / name)

    def removed(self, timeout: float) -> bool:
        """Wait until every copy handed to the remover is gone (False after ``timeout``)."""
        return self._remover.idle(timeout)

    # -- settling ----------------------------------------------------------------------------------

    async def settle(
        self,
        name: str,
        final: bool,
        *,
        audit_id: str,
        started_ns: int,
        roots: Sequence[str],
        ask: Ask | None,
        hold: bool,
        shown: str,
        what: What,
        baseline: dict[str, int] | None = None,
        untouched: bool = False,
        moved: Renamed = NO_RENAMES,
    ) -> Settled:
        """Settle the copy ``name`` of a call that has ended. ``ask``: ask the person now (None: cannot now);
        ``hold``: keep the change set for a later call when a question is needed and cannot be asked now;
        ``baseline``: a job's paths as its looks left them (see ``Applier.apply``); ``untouched``: its init found the
        copy empty and took it back (it is not ours to read or remove any more); ``moved``: what the box's
        rename handler said of its renames."""
        if not name:
            return Settled("none")
        if not final:
            # Threat: a process of the call could still be writing; what we would read is not what it did. Its copy
            # is left alone (removed once the box is gone: at exit, or by the next start's sweep).
            return Settled("failed", reason="the command's processes did not all end; nothing was applied")
        if untouched:
            return Settled("unchanged")  # the usual case, settled in the box
        if self._untouched(name):
            return Settled("unchanged")
        try:
            sets = await anyio.to_thread.run_sync(self.read, name, started_ns, moved, baseline)
        except (OSError, RecursionError, ValueError) as exc:
            await anyio.to_thread.run_sync(self.discard, name)
            return Settled("failed", reason=f"its changes could not be read ({_why(exc)}); nothing applied")
        timed = any(t.set_on_purpose(started_ns) for s in sets for t in s.times)
        if not any(s.changes or s.incomplete for s in sets) and not timed:
            # Nothing but a directory's time (a file made and removed again): put back as the command left it.
            await anyio.to_thread.run_sync(self._times_only, name, sets, audit_id, started_ns)
            return Settled("unchanged", refused=left_out(sets, self.display))
        if any(s.incomplete for s in sets):
            # A change set too large to list is refused whole: never judged on a part, never applied in part.
            await anyio.to_thread.run_sync(self.discard, name)
            return Settled("failed", reason=f"it changed more than {MAX_ENTRIES:,} paths, more than one call may "
                           "change; nothing was applied")  # fmt: skip
        from mcp_server_guard.changes.plan import NotApplied  # noqa: PLC0415 - with the first change (issue 44)

        try:
            judgement, outcome = await self._judged_apply(name, sets, roots, audit_id, started_ns, what, baseline)
        except _Unjudged as exc:
            await anyio.to_thread.run_sync(self.discard, name)
            return Settled("failed", reason=f"its changes could not be judged ({exc}); nothing applied")
        except NotApplied as exc:
            return Settled("failed", reason=not_applied(exc))
        settled = described(sets, judgement, self.display)
        if outcome is not None:
            return finished(settled, outcome, sets, judgement, self.display)
        settled = dataclasses.replace(settled, asked=judgement.question)
        answer = await ask(judgement.question) if ask is not None else None
        if answer is None and ask is None and hold:
            held = self._held.hold(name, audit_id, started_ns, shown, judgement, sets)
            if held is not None:
                held.baseline, held.moved = dict(baseline or {}), moved
            if held is None:  # alone more than may wait: said, never reported as waiting (it is gone)
                return dataclasses.replace(settled, transaction="failed",
                               reason=(f"its changes are more than may wait for a yes (held_max_bytes "
                                       f"{self.policy.held_max_bytes:,} bytes); nothing applied"))  # fmt: skip
            return dataclasses.replace(settled, transaction="held", held=held.id)
        # The call's decision is the person's (or that nobody could answer), not the command's: the result's
        # policyDecision and the audit record say who decided.
        if answer is True:
            audit.note(decision="ask-approved", approved_by=_HUMAN, changes_asked=judgement.question)
        elif answer is False:
            audit.note(decision="ask-declined", approved_by=_HUMAN, changes_asked=judgement.question)
        else:
            audit.note(decision="ask-unavailable", approved_by="", changes_asked=judgement.question)
        if answer is not True:
            await anyio.to_thread.run_sync(self.discard, name)
            reason = (
                "the user declined these changes"
                if answer is False
                else "nobody answered the question"
                if ask is not None
                else "they need the user's yes and this client cannot ask the user"
            )
            return dataclasses.replace(settled, transaction="declined", reason=reason)
        return await self._approved(name, sets, roots, judgement.asks, audit_id, started_ns, what, baseline)

    async def apply_live(
        self,
        name: str,
        started_ns: int,
        *,
        audit_id: str,
        roots: Sequence[str],
        baseline: dict[str, int],
        what: What,
    ) -> Settled:
        """A running job's changes so far, at a look: applied (copied: the job keeps its copy) when the judgement
        asks nothing; else nothing now (``waiting``): they are judged again, and asked about, when the job ends.
        Refused paths never go."""
        if not name:
            return Settled("none")
        try:
            sets = await anyio.to_thread.run_sync(self.read, name, started_ns, NO_RENAMES, baseline)
        except (OSError, RecursionError, ValueError) as exc:
            return Settled("waiting", reason=f"its changes could not be read now ({_why(exc)})")
        if not any(s.changes or s.incomplete for s in sets):
            return Settled("unchanged")
        if any(s.incomplete for s in sets):
            return Settled("waiting", reason=f"it changed more than {MAX_ENTRIES:,} paths so far: judged when it ends")

        from mcp_server_guard.changes.git_refs import in_git_state  # noqa: PLC0415 - with the first change (issue 44)
        from mcp_server_guard.changes.git_verdicts import Trees  # noqa: PLC0415
        from mcp_server_guard.changes.plan import NotApplied, live_waits  # noqa: PLC0415

        waiting: set[tuple[str, str]] = set()  # what this look leaves for the job's end

        def work() -> tuple[Judgement, Outcome | None]:
            # Judged and applied with no other apply of this server, or of another, between them.
            with self._judged(sets, roots, baseline, audit_id) as judgement:
                if judgement.asks:
                    return judgement, None
                # Threat: the job rewrites a config or pointer between this judgement and the copy — or the bytes
                # of a file judged a move (so its old name would go unasked, and other bytes land): what is judged
                # by its content waits for the job's end, when the copy no longer changes.
                # What involves a file's identity (several names, moves, replacements) waits for the job's end too
                # (``plan.live_waits``), looked at once, before anything of this look lands.
                waiting.update((s.root, p) for s in sets for p in live_waits(s))
                waiting.update(judgement.by_content | judgement.moved.keys())
                # Git's state is judged by what it names (a ref's commit, the index's blobs: red team 82 F1 swapped
                # a ref's id between this judgement and the copy): all of it waits for the job's end.
                for s in sets:
                    trees = Trees(s, roots)
                    waiting.update((s.root, c.path) for c in s.changes if in_git_state(trees, c.path))
                waiting.difference_update(judgement.refused)
                skip = frozenset(judgement.refused) | frozenset(waiting)
                only = tuple(judgement.only_copies)
                said = dataclasses.replace(what, only_copies=only) if only else what
                with self._rechecked(sets, roots, baseline, judgement):
                    live = self.applier.apply(
                        sets, audit_id, started_ns, skip=skip, what=said, live=True, baseline=baseline
                    )
                # Threat: a job deleting two files per look: what its looks counted counts at its next judgement.
                baseline[COUNTED_FILES] = baseline.get(COUNTED_FILES, 0) + judgement.touched
                baseline[COUNTED_UNBACKED] = baseline.get(COUNTED_UNBACKED, 0) + judgement.unbacked
                self._landed(sets, live)
                return judgement, live

        try:
            with anyio.CancelScope(shield=True):
                judgement, outcome = await anyio.to_thread.run_sync(work)
        except _Unjudged as exc:
            return Settled("waiting", reason=f"its changes could not be applied now ({exc})")
        except NotApplied as exc:
            return Settled("waiting", reason=f"its changes could not be applied now ({not_applied(exc)})")
        settled = described(sets, judgement, self.display)
        if outcome is None:
            return dataclasses.replace(settled, transaction="waiting", asked=judgement.question,
                           reason="they need the user's yes: asked when the job ends")  # fmt: skip
        settled = finished(settled, outcome, sets, judgement, self.display, waiting)
        if waiting and not any(a.action != "times" for a in outcome.applied) and not outcome.conflicts:
            settled = dataclasses.replace(settled, transaction="waiting", reason="judged and applied when the job ends")
        return settled

    async def _judged_apply(
        self,
        name: str,
        sets: Sequence[ChangeSet],
        roots: Sequence[str],
        audit_id: str,
        started_ns: int,
        what: What,
        baseline: dict[str, int] | None = None,
        approved: Sequence[str] | None = None,
    ) -> tuple[Judgement, Outcome | None]:
        """Judge ``sets`` and, when the judgement asks nothing beyond ``approved`` (the questions the person said
        yes to), apply them and remove the copy — the judgement still true under the apply's locks (``_judged``).
        The outcome is None when nothing was applied: the judgement asks something not approved (the copy stays)."""

        def work() -> tuple[Judgement, Outcome | None]:
            with self._judged(sets, roots, baseline, audit_id) as judgement:
                if judgement.asks and (approved is None or not set(judgement.asks) <= set(approved)):
                    return judgement, None
                try:
                    marked = judged_copy(sets, judgement.rewritten, judgement.moved)
                    skip = frozenset(judgement.refused)
                    # The call's record keeps the result's own summary and counts: `mcp-guard history` tells the
                    # call as the result told it (a new directory's files counted one by one, not as one tree).
                    said = dataclasses.replace(
                        what,
                        summary=judgement.summary,
                        counts=judgement.counts,
                        only_copies=tuple(judgement.only_copies) or what.only_copies,
                    )
                    self.applier.history.approved.update(judgement.evicts)  # asked, and the person said yes
                    with self._rechecked(marked, roots, baseline, judgement):
                        outcome = self.applier.apply(
                            marked, audit_id, started_ns, skip=skip, what=said, baseline=baseline
                        )
                        # Threat (red team 137 F1): a judged move's new end (``cp -p draft keep && rm draft``,
                        # ``gzip draft``) holds the user's bytes, not the tool's own output (an only copy).
                        for r, p in (*judgement.moved, *judgement.by_content):
                            self.applier.landed.pop(os.path.join(r, p), None)
                finally:
                    if not self.applier.unfinished(audit_id):  # (a journal left needs the copy: the next start's)
                        self.discard(name)
                self._landed(marked, outcome)
                return judgement, outcome

        from mcp_server_guard.changes.effects import Judgement  # noqa: PLC0415 - with the first change (issue 44)

        done: tuple[Judgement, Outcome | None] = (Judgement(), None)
        with anyio.CancelScope(shield=True):  # an apply, once started, finishes
            done = await anyio.to_thread.run_sync(work)
        return done

    @contextlib.contextmanager
    def _rechecked(
        self, sets: Sequence[ChangeSet], roots: Sequence[str], job: dict[str, int] | None, judgement: Judgement
    ) -> Iterator[None]:
        """While ``sets`` are applied as ``judgement`` judged them: when a long apply let go of the tree lock for a
        moment and another server's writer came in (``treelock.breathe``), the steps left are judged again, now.

        Threat (red team 83 F3): the writer let in makes ``shaped/`` a git dir; a later step of the apply lands
        ``shaped/config`` with ``core.fsmonitor``, judged for a plain directory: the user's ``git status`` runs it.
        A path of the steps left that is now refused, whose content would now be rewritten, or a question the
        person was not asked (the steps left judged alone: a count may read differently) stops the apply: it
        goes back whole (``Applier.stale``) — but for what going back would put back that is refused where it lands
        now (``Applier.restores``; red team 84 F1: the earlier config, with its fsmonitor, into that git dir)."""

        from mcp_server_guard.changes.plan import not_stale, nothing_refused  # noqa: PLC0415 - (issue 44)
        from mcp_server_guard.changes.undo_judged import refused_restores  # noqa: PLC0415

        def stale(left: Sequence[Op]) -> str:
            paths = frozenset(op.path for op in left)
            below = [dataclasses.replace(s, changes=tuple(c for c in s.changes if within_set(c.path, paths)))
                     for s in sets]  # fmt: skip
            try:
                now = self._effects([s for s in below if s.changes], roots, job)
            except (OSError, RecursionError, ValueError) as exc:
                return (
                    f"another server wrote in the project meanwhile; the steps left could not be judged ({_why(exc)})"
                )
            new = [f"{p} ({why})" for (r, p), why in sorted(now.refused.items()) if (r, p) not in judgement.refused]
            new += [f"{p} (a git config now)" for r, p in sorted(now.rewritten) if (r, p) not in judgement.rewritten]
            # (red team 85 F2: a module a .pth landed in the gap now imports — a question nobody was asked)
            new += [f"it would now ask: {ask}" for ask in now.asks if ask not in judgement.asks]
            return (f"another server wrote in the project while this apply let it in, and what its steps left would "
                    f"write is refused now: {'; '.join(printable(n) for n in new[:5])}") if new else ""  # fmt: skip

        def restores(ops: Sequence[Op]) -> dict[tuple[str, str], str]:  # (going back: ``plan.held_back``)
            return refused_restores(self.applier.history, ops, self.protection, self.policy, roots)

        self.applier.stale, self.applier.restores = stale, restores
        try:
            yield
        finally:
            self.applier.stale, self.applier.restores = not_stale, nothing_refused

    async def _approved(
        self,
        name: str,
        sets: Sequence[ChangeSet],
        roots: Sequence[str],
        approved: Sequence[str],
        audit_id: str,
        started_ns: int,
        what: What,
        baseline: dict[str, int] | None = None,
    ) -> Settled:
        """Apply what the person approved (``approved``: the questions they said yes to), judged again now;
        nothing when the tree changed so that it asks something new."""
        from mcp_server_guard.changes.plan import NotApplied  # noqa: PLC0415 - with the first change (issue 44)

        try:
            judgement, outcome = await self._judged_apply(
                name, sets, roots, audit_id, started_ns, what, baseline, approved=approved
            )
        except _Unjudged as exc:
            await anyio.to_thread.run_sync(self.discard, name)
            return Settled("failed", reason=f"its changes could not be judged ({exc}); nothing applied")
        except NotApplied as exc:
            return Settled("failed", reason=not_applied(exc))
        settled = described(sets, judgement, self.display)
        if outcome is None:
            await anyio.to_thread.run_sync(self.discard, name)
            return dataclasses.replace(settled, transaction="declined", asked=judgement.question,
                           reason="the project changed while the user was asked, and these changes now ask something "
                           "new")  # fmt: skip
        return finished(settled, outcome, sets, judgement, self.display)

    # -- held change sets --------------------------------------------------------------------------

    def held(self, held_id: str) -> Held | None:
        return self._held.get(held_id)

    def all_held(self) -> list[Held]:
        return self._held.all()

    async def drop_held(self, held_id: str) -> Held | None:
        held = self._held.pop(held_id)
        if held is not None:
            await anyio.to_thread.run_sync(self.discard, held.name)
        return held

    async def apply_held(self, held_id: str, *, audit_id: str, roots: Sequence[str], what: What) -> Settled:
        """Apply a held change set the person has just approved, judged again against the tree as it is now; it
        is recorded (and undone) under ``audit_id``, the call that applies it — a job's end whose looks applied
        something, under the job's id with them (one record, one undo)."""
        held = self._held.pop(held_id)
        if held is None:
            return Settled("failed", reason=f"no held change set {held_id} (applied, dropped or expired)")
        try:
            sets = await anyio.to_thread.run_sync(self.read, held.name, held.started_ns, held.moved, held.baseline)
        except (OSError, RecursionError, ValueError) as exc:
            await anyio.to_thread.run_sync(self.discard, held.name)
            return Settled("failed", reason=f"its changes could not be read ({_why(exc)}); nothing applied")
        record_id = held.audit_id if held.baseline else audit_id
        return await self._approved(held.name, sets, roots, held.asks, record_id, held.started_ns,
                                    dataclasses.replace(what, held=held.id, for_call=held.audit_id),
                                    held.baseline or None)  # fmt: skip

    def close(self) -> None:
        self._held.clear()
        self._remover.stop(timeout=5.0)
