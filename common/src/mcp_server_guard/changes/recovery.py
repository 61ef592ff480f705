"""Finishing what a dead server left half done: at start-up (``shell_exec``) and before an undo (``mcp-guard
undo``), every apply or undo journal in the history store whose server is gone is finished — or gone back over,
when it was going back — provided it checks out: every step inside this server's directories, taking files only
from its copies, of a kind a run makes, naming only history ids, and putting back only what was kept from that
very path. A journal that does not check out is left alone (and said in the log).
"""

from __future__ import annotations

import fcntl
import logging
import os
import posixpath
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mcp_server_guard.changes import name_changes
from mcp_server_guard.changes.changeset import ROOT
from mcp_server_guard.files import widened
from mcp_server_guard.files.history import JOURNALS, HistoryError, HistoryStore
from mcp_server_guard.files.treelock import TreeBusy, tree_lock
from mcp_server_guard.paths import within_any

if TYPE_CHECKING:
    from mcp_server_guard.changes.plan import Op, Plan

# What finishes a journal (``changes.apply`` and the steps' modules) loads only when there is one to finish: a start
# with none, the usual one, does without them (issue 44).
# ``Applier.stale`` and ``Applier.restores`` for a journal's run (``undo_judged.rechecks_for``), made when one is found.
Rechecked = tuple[Callable[[Sequence["Op"]], str], Callable[[Sequence["Op"]], Mapping[tuple[str, str], str]]]
Rechecks = Callable[[], Rechecked]

__all__ = ["Rechecked", "Rechecks", "recover"]

log = logging.getLogger("mcp_server_guard.changes")


def recover(
    history: HistoryStore,
    roots: Sequence[str],
    areas: Sequence[str],
    rechecks: Rechecks | None = None,
) -> int:
    """At start-up: finish every apply a dead server left half done (its journal is not locked) whose every step
    lies inside ``roots`` and takes its files from inside ``areas`` (the places this server's copies can be);
    another's is left for a server of those directories. Returns how many were finished.

    Threat: a journal someone forged (the history store is hidden from every tool; this is the second wall)
    naming a root, a path or an upper directory elsewhere, to have the server place or remove files there.
    ``rechecks``: made at the first journal to finish, ``Applier.stale`` and ``Applier.restores`` for its runs
    (``undo_judged.Rechecks``: what their steps left write, and what going back puts back, judged now)."""
    name_changes.keep_notes_in(history.directory)  # (as an ``Applier`` of ``history`` says: before the put back)
    # Modes a dead server widened for one step, put back first (red team 64 F2): the runs finished below find the
    # project, their copies and the history as the dead server found them.
    widened.put_back([*roots, *areas, str(history.directory)], name_changes.note_put_back)
    directory = history.directory / JOURNALS
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return 0
    finished = 0
    if any(name.startswith("apply-") and name.endswith(".json") for name in names):
        finished = _finish_journals(history, roots, areas, rechecks, directory, names)
    for name in names:  # room a run killed before it removed its journal had kept (``changes.reserve``)
        if name.startswith("reserve-") and f"apply-{name[len('reserve-') :]}.json" not in names:
            (directory / name).unlink(missing_ok=True)
        elif name.startswith(".apply-") and name.endswith(".tmp"):
            _stale_temp(directory / name)
    return finished


def _finish_journals(
    history: HistoryStore,
    roots: Sequence[str],
    areas: Sequence[str],
    rechecks: Rechecks | None,
    directory: Path,
    names: Sequence[str],
) -> int:
    """``recover``'s journals (``names`` in ``directory``) finished: how many."""
    from mcp_server_guard.changes.apply import Applier, NotApplied  # noqa: PLC0415 - only with a journal (issue 44)
    from mcp_server_guard.changes.journal import Journal, read_journal  # noqa: PLC0415

    applier = Applier(history)
    finished = 0
    for name in names:
        if not (name.startswith("apply-") and name.endswith(".json")):
            continue
        path = directory / name
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        handed = False  # to the run, which closes it
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # its server is alive and applying
            with os.fdopen(os.dup(fd), "rb") as fh:
                text = fh.read()
            replay = read_journal(text.decode("utf-8", "surrogateescape").splitlines(), applier.key, path)
            if replay.untrusted:
                log.warning("left the apply journal %s alone: %s", path, replay.untrusted)
                continue
            if replay.plan is None:
                path.unlink(missing_ok=True)
                continue
            if text and not text.endswith(b"\n"):
                os.write(fd, b"\n")  # a line torn by the crash ends here: the next one is whole
            plan, baseline = replay.plan, replay.baseline
            outside = _outside(plan, roots, areas) or _untrusted(history, plan)
            if outside:
                log.warning("left the apply journal %s for another server: %s", path, outside)
                continue
            # The same lock every writer takes: no live server's apply or write comes between these steps.
            with tree_lock(os.stat(root).st_dev for root in {op.root for op in plan.ops}):
                handed = True  # _run closes (and removes) it once the plan is finished
                try:
                    journal = Journal(path, fd, applier.key, replay.last)
                    if rechecks is not None:
                        applier.stale, applier.restores = rechecks()
                    applier._run(plan, baseline, replay.done, journal, replay=replay)
                    log.warning("finished the apply of call %s that a dead server left half done", plan.audit_id)
                except NotApplied as exc:
                    log.warning("went back over call %s that a dead server left half done: %s", plan.audit_id,
                                exc.why)  # fmt: skip
            finished += 1
        except (OSError, ValueError, KeyError, TypeError, TreeBusy) as exc:
            log.error("cannot finish the apply journal %s: %s", path, exc)
        finally:
            if not handed:
                os.close(fd)
    return finished


def _stale_temp(path: Path) -> None:
    """A journal's temp name a run killed while making it left (red team 77 F2: it kept the journal's room held for
    good): removed unless its run still holds its lock."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # its run is alive
    finally:
        os.close(fd)
    path.unlink(missing_ok=True)


_PUTS_BACK = frozenset({"restore", "swap"})


def _untrusted(history: HistoryStore, plan: Plan) -> str:
    """Why a journal's plan is not one of ours ("" when every step checks out): a step kind no run makes, an
    entry that is no history id, or a step that would put back a history entry kept from another path or for
    another call than the one it says it undoes.

    Threat: a journal forged where a command can write (a state directory inside another server's root) that
    has the next start "finish" it: plant a file through a made-up step, or put some entry's bytes (a hook kept
    earlier) at a path of the forger's choice."""
    from mcp_server_guard.changes.pins import NAME_STEPS  # noqa: PLC0415 - loaded with the apply (issue 44)
    from mcp_server_guard.changes.revert import UNDO_STEPS  # noqa: PLC0415
    from mcp_server_guard.changes.steps import APPLY_STEPS  # noqa: PLC0415

    kinds = frozenset({"tree", "place", "copy", "adopt", *APPLY_STEPS, *NAME_STEPS, *UNDO_STEPS})
    undone = plan.what.undoes or ""
    for op in plan.ops:
        if op.kind not in kinds:
            return f"a step of kind {op.kind!r}"
        record = op.record
        for entry in (op.entry, record.before if record is not None else ""):
            if entry and not history.is_id(entry):
                return f"a step naming {entry!r} as a history entry"
        if op.kind in _PUTS_BACK and record is not None and record.before:
            try:
                kept = history.metadata(record.before)
            except HistoryError:
                continue  # gone already: the step finds it put back, or fails on its own
            absolute = posixpath.join(op.root, op.path) if op.path != ROOT else op.root
            if kept.path != absolute or (undone and kept.audit_id not in (undone, plan.audit_id)):
                return f"a step putting back {record.before} (kept from {kept.path}) at {absolute}"
    return ""


def _outside(plan: Plan, roots: Sequence[str], areas: Sequence[str]) -> str:
    """Why a journal's plan is not this server's to finish ("" when every step is inside its places)."""
    for op in plan.ops:
        # Threat: a root or copy spelt with ``..`` (``<root>/../outside``) passes a test by string prefix.
        for where in (op.root, op.upper):
            if where and (posixpath.normpath(where) != where or ".." in where.split("/")):
                return f"a step in {where!r}, not a plain absolute path"
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
