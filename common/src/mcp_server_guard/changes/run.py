"""What the steps of one apply or undo share while it runs (``changes.steps``, ``changes.revert``)."""

from __future__ import annotations

import os
import posixpath
import stat
import time
from dataclasses import dataclass, field

from mcp_server_guard.changes import name_changes
from mcp_server_guard.changes.nofollow import unchanged

__all__ = ["Run"]


@dataclass
class Run:
    """What the steps of one apply or undo share while it runs."""

    audit_id: str
    started: int  # when the command started (ns): a path changed later is someone else's
    baseline: dict[str, int]  # a job's paths (and directories) as its earlier looks left them: their ctime then
    ours: set[tuple[int, int]] = field(default_factory=set)  # inodes whose names this run changed (their ctime too)
    # undo: an inode's group -> a name it is back at, and what that name holds (the inode, or a copy of it)
    restored: dict[tuple[int, ...], tuple[str, tuple[int, ...]]] = field(default_factory=dict)
    names: dict[tuple[int, int], list[str]] = field(default_factory=dict)  # undo: names of inodes, when planned
    groups: set[tuple[int, ...]] = field(default_factory=set)  # undo: the inodes its records restore
    copies: dict[tuple[int, ...], list[str]] = field(default_factory=dict)  # undo: names holding a copy, by group
    failed: set[str] = field(default_factory=set)  # absolute paths a step could not apply (their links wait)
    marked: list[str] = field(default_factory=list)  # absolute paths landed with user.overlay.* names (escapes)
    placed: dict[str, tuple[int, int]] = field(default_factory=dict)  # absolute path -> what this run put there
    replay: bool = False  # finishing a dead server's run: a step may find itself done, or half done, already
    rechecked: bool = False  # a dead server's run: its steps left were judged again (``Applier.stale``) first
    fatal: str = ""  # a step failed for want of space (or of the disk): the run cannot finish
    carried: frozenset[tuple[str, bytes]] = frozenset()  # the project's own user.overlay.* attributes: data
    landed: set[tuple[int, int]] = field(default_factory=set)  # inodes made ready (land) already: not made again
    # absolute path of a tree about to be kept -> its files with other names (path in the tree, device, inode)
    tree_links: dict[str, list[tuple[str, int, int]]] = field(default_factory=dict)
    began: int = field(default_factory=time.time_ns)  # when it began (ns)
    looked: dict[str, int] = field(default_factory=dict)  # the baseline as the run began (its steps update it)
    # undo: history entries of trees put back whose files were made names of others again, let go when the run
    # ends — a crash before then finds which of their files had other names still (``Applier._steps``)
    forget_later: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.looked = dict(self.baseline)

    def stays(self, real: os.stat_result | tuple[int, ...], absolute: str) -> str:
        """Another name of ``real`` (a file with several; or its group: a file kept before a crash) this undo knew
        of, that this step does not take away."""
        if not isinstance(real, os.stat_result):
            group = real
        elif not stat.S_ISREG(real.st_mode) or real.st_nlink < 2:
            return ""
        else:
            group = (real.st_dev, real.st_ino)
        return next((n for n in self.names.get((group[0], group[1]), []) if n != absolute), "") if group else ""

    def put_back_before(self, group: tuple[int, ...], absolute: str, placed: os.stat_result) -> None:
        """Undo: a file of ``group`` put back at ``absolute`` before a crash cut its step (not yet journalled as
        done): the later names of the group this undo puts back are made names of it (a pre-image copied back from
        a history on another file system is a new inode: no name holds it yet — red team 56 F5)."""
        if group and stat.S_ISREG(placed.st_mode):
            self.restored.setdefault(group, (absolute, (placed.st_dev, placed.st_ino)))

    def named(self, before: os.stat_result, after: os.stat_result | None) -> None:
        """This run made or took away a name of ``before`` (as looked at before, its lock held) just now; ``after``:
        the file then (None: not looked at). Its ctime moved, not what it holds — for this run's later steps, and
        for other calls running meanwhile (``name_changes``)."""
        self.ours.add((before.st_dev, before.st_ino))
        if after is not None:
            name_changes.note(before, after)

    def unchanged(self, dirfd: int, name: str, real: os.stat_result, absolute: str) -> tuple[int, int]:
        """Raise Changed unless ``real`` is as the command found it (see ``nofollow.unchanged``); a file whose other
        name this run replaced had its ctime changed by us, not by someone else."""
        if not stat.S_ISDIR(real.st_mode) and (real.st_dev, real.st_ino) in self.ours:
            return (0, 0)
        linked: list[tuple[str, int, int]] = []
        # (A tree a running job's earlier looks applied in part: each path they applied counts from then.)
        counted = unchanged(dirfd, name, real, self.started, self.baseline.get(absolute), self.ours, linked,
                            self.baseline, posixpath.dirname(absolute))  # fmt: skip
        if linked:
            self.tree_links[absolute] = linked  # kept as copies: a later change through another name is not theirs
            # Keeping them so takes a name from each inode (its ctime changes): ours, not someone else's change.
            self.ours.update((dev, ino) for _rel, dev, ino in linked)
        return counted
