"""The one line a person can judge in five seconds: what a change set does (``summary_line``), and its counts.

Part of the judgement (``changes.effects``), kept apart: counting and wording only, no verdict.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from mcp_server_guard.changes.changeset import Change, ChangeSet
from mcp_server_guard.paths import printable

__all__ = ["MODES_NAMED", "Counts", "MoveEnds", "count_of", "list_of", "summary_line"]


@dataclass
class Counts:
    created: int = 0  # files (not directories) the command made
    modified: int = 0
    deleted: int = 0
    meta: int = 0  # mode or time only
    moved: int = 0  # deleted here and created, same bytes, there (not counted as created or deleted)
    bytes: int = 0  # of the files made or rewritten
    deleted_bytes: int = 0

    @property
    def total(self) -> int:
        return self.created + self.modified + self.deleted + self.meta + self.moved


MODES_NAMED = 100  # paths whose mode changes named in a summary or a question (past it: "and N more")


def list_of(items: Sequence[str], shown: int = 3) -> str:
    head = ", ".join(items[:shown])
    return head + (f" and {len(items) - shown} more" if len(items) > shown else "")


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{n} B"


def count_of(count: int, noun: str) -> str:
    plural = noun if count == 1 else f"{noun[:-1]}ies" if noun.endswith("y") else f"{noun}s"
    return f"{count:,} {plural}"


def _under(paths: Sequence[str]) -> str:
    """Where most of ``paths`` are: their longest common directory (named when it is not the root)."""
    if not paths:
        return ""
    common = posixpath.commonpath(["/" + p for p in paths]).lstrip("/")
    if common in paths and len(paths) == 1:
        common = posixpath.dirname(common)
    return f" under {common}/" if common else ""


@dataclass(frozen=True)
class MoveEnds:
    """The two ends of the moves a judgement found, apart: a path can be one move's source and another file's place
    (``mv d/a e && rm -rf d && mkdir d && echo x > d/a``)."""

    sources: frozenset[tuple[str, str]] = frozenset()
    ends: frozenset[tuple[str, str]] = frozenset()

    @classmethod
    def of(cls, moves: Mapping[tuple[str, str], tuple[str, str]]) -> MoveEnds:
        """From a judgement's ``moved`` (each end to where the file came from; a source to itself)."""
        return cls(frozenset(k for k, v in moves.items() if v == k), frozenset(k for k, v in moves.items() if v != k))

    def here(self, key: tuple[str, str], change: Change) -> bool:
        """Whether ``change`` at ``key`` is an end of a move: a deletion only as a move's source, anything else only
        as a move's place. Threat (red team 91 F1): ``rm -rf src && mv src_new src`` — the user's own ``src/a.py``,
        deleted where a moved file now stands, counted as part of the move: lost, asked nothing; and its mirror (red
        team 92 F2): a file made where a moved one came from, counted as the move — said nowhere, judged as nothing."""
        return key in (self.sources if change.action == "delete" else self.ends)


def summary_line(
    sets: Sequence[ChangeSet],
    refused: Iterable[tuple[str, str]] = (),
    moves: Mapping[tuple[str, str], tuple[str, str]] | None = None,
    untimed: Iterable[tuple[str, str]] = (),
    ends: MoveEnds | None = None,
) -> tuple[str, Counts]:
    """What the change sets do, in one line ("delete 1,234 files under src/ (12.3 MB), modify 3"), and counts.
    ``moves``: (root, path) of files deleted and of files created that are the same bytes moved, each to the
    (root, path) the file was moved from; ``untimed``: (root, path) of directories whose time was not set."""
    moves = moves or {}
    ends = ends or MoveEnds.of(moves)
    skip = set(refused)
    counts = Counts()
    deleted: list[str] = []
    made: list[str] = []
    changed: list[str] = []
    origins: list[str] = []
    targets: list[str] = []
    for changes in sets:
        for change in changes.changes:
            if (changes.root, change.path) in skip or change.kind == "dir":
                continue
            if ends.here((changes.root, change.path), change):
                (origins if change.action == "delete" else targets).append(change.path)
                counts.moved += change.action == "delete"
                continue
            if change.action == "create":
                counts.created += 1
                counts.bytes += change.size
                made.append(change.path)
            elif change.action == "modify":
                counts.modified += 1
                counts.bytes += change.size
                changed.append(change.path)
            elif change.action == "delete":
                counts.deleted += 1
                counts.deleted_bytes += change.size
                deleted.append(change.path)
            else:
                counts.meta += 1
                changed.append(change.path)
    parts = []
    if counts.moved:
        parts.append(
            f"move {count_of(counts.moved, 'file')}{_under(origins)}"
            + (f" to{where[6:]}" if (where := _under(targets)) else "")
        )
    if counts.deleted:
        parts.append(f"delete {count_of(counts.deleted, 'file')}{_under(deleted)} ({_size(counts.deleted_bytes)})")
    if counts.modified:
        parts.append(f"modify {count_of(counts.modified, 'file')}{_under(changed) if counts.modified > 3 else ''}")
    if counts.created:
        parts.append(f"create {count_of(counts.created, 'file')}{_under(made) if counts.created > 3 else ''}")
    # Every path whose mode changes is named (a directory made group-writable is as much a change as a file).
    # Also with new content (``echo >> f && chmod 700 f``), or a directory made again (``rm -r d && mkdir -m 700 d``).
    # And a file moved with a mode other than it had (``mv a b && chmod 755 b``: red team 42q I).
    # And a directory moved with another mode (``chmod 700 d && mv d e``: red team 74 F5).
    gone = {(s.root, c.path): (c.kind, c.mode) for s in sets for c in s.changes if c.action == "delete"}
    came_from = {**_moved_dirs(moves), **moves}
    # And a directory moved with another mode when no file moved with it to tell where it came from (red team 88 F5:
    # ``chmod 777 build/x && mv build/x build/y``, an empty one): a new directory with a mode no deleted one had.
    dir_modes = {s.root: frozenset(m for (r, _p), (k, m) in gone.items() if r == s.root and k == "dir") for s in sets}
    remoded = [c for s in sets for c in s.changes if (s.root, c.path) not in skip and _remoded(
        c, gone.get((s.root, c.path)), gone.get(came_from.get((s.root, c.path), ("", ""))),
        dir_modes[s.root])]  # fmt: skip
    if remoded:
        named = [f"{c.path}{'/' if c.kind == 'dir' else ''} to {c.mode:04o}" for c in remoded]
        parts.append(f"change the mode of {list_of(named, MODES_NAMED)}")
    # (A re-moded file that also moved is named above and counted as moved, not as a metadata change.)
    times_only = max(counts.meta - sum(1 for c in remoded if c.kind != "dir" and c.action == "meta"), 0)
    if times_only:
        parts.append(f"change the times or attributes of {count_of(times_only, 'file')}")
    if not parts:
        dirs = sum(1 for s in sets for c in s.changes if c.kind == "dir" and (s.root, c.path) not in skip)
        kept = skip | set(untimed)  # (``untimed``: directories whose time was not set)
        timed = [t.path for s in sets for t in s.times if t.mtime_ns != t.old_mtime_ns and (s.root, t.path) not in kept]
        if dirs:
            parts.append(f"change {count_of(dirs, 'directory')}")
        elif timed:
            parts.append(f"set the time of {list_of([p.rstrip('/') + '/' if p != '.' else './' for p in timed])}")
        else:
            parts.append("change nothing")
    return printable(", ".join(parts)), counts


def _moved_dirs(moves: Mapping[tuple[str, str], tuple[str, str]]) -> dict[tuple[str, str], tuple[str, str]]:
    """The directories files moved with: ``e/x`` from ``d/x`` says ``e`` came from ``d`` (each pair of parents with
    the same names below them)."""
    found: dict[tuple[str, str], tuple[str, str]] = {}
    for (root, path), (origin_root, origin) in moves.items():
        to, was = path.split("/"), origin.split("/")
        while len(to) > 1 and len(was) > 1 and to[-1] == was[-1]:
            to, was = to[:-1], was[:-1]
            if to != was or root != origin_root:
                found.setdefault((root, "/".join(to)), (origin_root, "/".join(was)))
    return found


def _remoded(
    change: Change, replaced: tuple[str, int] | None, origin: tuple[str, int] | None, dir_modes: frozenset[int]
) -> bool:
    """Whether a change leaves its path with another mode than the real entry had — there (``replaced``: the kind
    and mode of what a new directory replaces), or where a moved file or directory came from (``origin``; a new
    directory whose origin nothing tells: unless a directory the set deletes had its mode, ``dir_modes``) —
    content changed or not."""
    if change.action == "create" and change.kind == "dir" and replaced is None and origin is None and dir_modes:
        return change.mode not in dir_modes
    if change.action in ("meta", "modify"):
        # (a file replaced by a link: a link has no mode of its own — its 0777 is no grant, red team 81 F3)
        return change.mode != change.old_mode and change.kind != "symlink"
    if change.action == "create" and origin is not None and (origin[0] == "dir") == (change.kind == "dir"):
        return origin[1] != change.mode
    return (
        change.action == "create"
        and change.kind == "dir"
        and replaced is not None
        and replaced[0] == "dir"
        and (replaced[1] != change.mode)
    )
