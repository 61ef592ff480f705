"""What became of one call's changes, as its result tells it: :class:`Settled`, with the paths it changed, what was
refused or left out, and the conflicts of its apply (``described``, then ``finished`` once the apply ran).

Used by ``changes.transactions``, which settles each call's transaction.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from mcp_server_guard.changes.changeset import ROOT, ChangeSet
from mcp_server_guard.changes.summary import Counts, summary_line
from mcp_server_guard.paths import printable

if TYPE_CHECKING:  # (the judging and applying modules load with the first change to judge: issue 44)
    from mcp_server_guard.changes.effects import Judgement
    from mcp_server_guard.changes.plan import Conflict, NotApplied, Outcome

__all__ = ["Settled", "described", "finished", "not_applied"]

_SHOWN_PATHS = 20


@dataclass(frozen=True)
class Settled:
    """What became of one call's changes (built once; a later stage makes another with ``dataclasses.replace``)."""

    # applied, held, declined, unchanged, failed, none (no copy: the command wrote directly); waiting (a running
    # job's changes that need the user's yes: asked when it ends)
    transaction: str
    summary: str = ""
    counts: Counts = field(default_factory=Counts)
    paths: list[tuple[str, str]] = field(default_factory=list)  # the first paths, with what happened to each
    conflicts: list[Conflict] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    held: str = ""  # the id a later call applies or drops it by
    asked: str = ""  # what the person was (or will be) asked
    reason: str = ""  # why nothing was applied
    undoable: bool = False  # applied, and the call has a record its undo plays back


def described(sets: Sequence[ChangeSet], judgement: Judgement, display: Callable[[str], str]) -> Settled:
    """What became of a call's changes, as the result says it: the paths listed, and what was refused or left out."""
    settled = _listed(sets, judgement, display)
    dropped: list[tuple[str, str]] = []
    for path, keys in judgement.dropped_keys.items():
        where = next((s.root for s in sets if (s.root, path) in judgement.rewritten), "")
        shown = display(os.path.join(where, path))
        dropped.append(
            (shown, printable(f"applied without the keys that can make git run programs: {', '.join(keys)}"))
        )
    return replace(settled, refused=[*settled.refused, *dropped]) if dropped else settled


def _listed(sets: Sequence[ChangeSet], judgement: Judgement, display: Callable[[str], str]) -> Settled:
    paths: list[tuple[str, str]] = []
    refused: list[tuple[str, str]] = []
    for changes in sets:
        for change in changes.changes:
            absolute = os.path.join(changes.root, change.path)
            why = judgement.refused.get((changes.root, change.path))
            if why is not None:
                top_why = judgement.refused.get((changes.root, change.top)) if change.top else None
                if top_why is None or why != top_why:  # listed, unless refused only as part of its tree
                    refused.append((display(absolute), printable(why)))
                continue
            if change.top or (change.kind == "dir" and change.action == "create" and not change.opaque):
                continue  # a new directory shows in what is made in it; a mode or attribute change does not
            if len(paths) < _SHOWN_PATHS:
                paths.append((display(absolute) + ("/" if change.kind == "dir" else ""), change.action))
    return Settled("applied", judgement.summary, judgement.counts, paths, refused=refused + left_out(sets, display))


def left_out(sets: Sequence[ChangeSet], display: Callable[[str], str]) -> list[tuple[str, str]]:
    """The attributes a command set that are never applied (``ChangeSet.dropped``), with why."""
    said: list[tuple[str, str]] = []
    for changes in sets:
        for path, names in changes.dropped:
            # Threat: attributes overlayfs reads as its own, set on a project file, would make every later copy
            # hide it or refuse to read it (and other overlays the user mounts).
            why = ("access control lists a command sets are not applied: they grant what the mode does not show"
                   if "posix_acl" in names else "overlayfs reads such attributes as its own")  # fmt: skip
            if path == ROOT:  # the copy's upper root stands for it: what a command does to these is not applied
                why = "the root's own access control lists and user.overlay.* attributes stay as they are"
            said.append((display(os.path.join(changes.root, path)), f"its {names} left out: {why}"))
    return said


def finished(
    settled: Settled,
    outcome: Outcome,
    sets: Sequence[ChangeSet],
    judgement: Judgement,
    display: Callable[[str], str],
    waiting: set[tuple[str, str]] | None = None,
) -> Settled:
    # What a conflict kept from landing (``rm -r d`` while someone else wrote in ``d``), or a job's look left
    # for the job's end (``waiting``), is not in the summary.
    skipped = {c.path for c in outcome.conflicts if c.skipped}
    paths, summary, counts = settled.paths, settled.summary, settled.counts
    if waiting:
        skipped |= {os.path.join(root, path) for root, path in waiting}
        shown = {display(path) for path in skipped}
        paths = [(path, action) for path, action in paths if path.rstrip("/") not in shown]
    # A directory time not set (someone else changed the directory meanwhile: theirs is the later change) is not
    # said to be set (red team 10 F4).
    timed = {os.path.normpath(a.path) for a in outcome.applied if a.action == "times"}
    unset = {
        os.path.normpath(f"{s.root}/{t.path}") for s in sets for t in s.times if t.mtime_ns != t.old_mtime_ns
    } - timed
    if skipped or unset:
        # (A mode change of a file with several names is one change: skipped for one name, skipped for all.)
        files = {c.inode for s in sets for c in s.changes if c.inode and os.path.join(s.root, c.path) in skipped}
        left = [
            (s.root, c.path)
            for s in sets
            for c in s.changes
            if os.path.join(s.root, c.path) in skipped
            or (c.top and os.path.join(s.root, c.top) in skipped)
            or (c.inode and c.inode in files)
        ]
        # (A directory time not set: someone else changed the directory meanwhile, red team 9 F4.)
        untimed = [(s.root, t.path) for s in sets for t in s.times if os.path.normpath(f"{s.root}/{t.path}") in
                   skipped | unset]  # fmt: skip
        summary, counts = summary_line(sets, [*judgement.refused, *left], judgement.moved, untimed)
    if not paths:  # nothing but directories' times set on purpose (touch -d 2001-01-01 d): those
        paths = [(display(a.path) + "/", "meta") for a in outcome.applied
                 if a.action == "times" and a.mtime_ns != a.old_mtime_ns][:_SHOWN_PATHS]  # fmt: skip
    from mcp_server_guard.changes.plan import Conflict  # noqa: PLC0415 - loaded with the apply (issue 44)

    conflicts = [Conflict(display(c.path), printable(c.what)) for c in outcome.conflicts]
    return replace(settled, transaction="applied", summary=summary, counts=counts, paths=paths, conflicts=conflicts,
                   undoable=outcome.recorded)  # fmt: skip


def not_applied(exc: NotApplied) -> str:
    """Why a change set did not land, for the result: refused before anything changed, or gone back."""
    if exc.kept:  # (red team 75 F3: not "nothing was applied" — what was done stays until the next start)
        return (f"{printable(exc.why)}; what was done so far stays as it is until the next start of shell_exec "
                "finishes the call or goes back over it (its journal is kept)")  # fmt: skip
    if not exc.left:
        return f"{printable(exc.why)}; nothing was applied"
    shown = "; ".join(f"{printable(c.path)}: {printable(c.what)}" for c in exc.left[:3])
    return (f"{printable(exc.why)}; what was applied was put back, except {len(exc.left)} path(s) ({shown}): "
            "`mcp-guard undo` this call's audit id to put them back too")  # fmt: skip
