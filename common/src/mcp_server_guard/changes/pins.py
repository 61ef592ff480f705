"""Names made of real files for the length of an apply's first steps, without a record of their own: a name in the
command's tree made a name of the real file before the tree moves (``adopt``), and a name kept beside a file with
several names while new names of real files are made in a cycle (``pin``/``unpin``: see ``plan._in_order``)."""

from __future__ import annotations

import contextlib
import os
import posixpath
import stat

from mcp_server_guard.changes.nofollow import Changed, lstat_at, parent
from mcp_server_guard.changes.plan import Applied, Op
from mcp_server_guard.changes.run import Run
from mcp_server_guard.changes.steps import change_of
from mcp_server_guard.files.history import HistoryStore

__all__ = ["NAME_STEPS", "adopt"]


def adopt(history: HistoryStore, op: Op, root: int, upper: int, run: Run, absolute: str) -> list[Applied]:
    """A name inside a tree of the command's made a name of a real file before the tree moves (``mv sp t && mv d sp
    && mv t d``: every old name of the file goes with a tree): linked into the upper layer (ours once the command
    has ended), so the tree lands holding the real file. Nothing of the real tree changes here (no record: the
    tree's own step records what lands). Not linked when the real file changed since the command started (the
    tree then lands with the command's copy, and that is said)."""
    del history, absolute
    change = change_of(op)
    target = posixpath.join(op.root, change.link)
    with parent(root, change.link) as (src_dir, src_name), parent(upper, op.path) as (dirfd, name):
        source = lstat_at(src_name, src_dir)
        if source is None or not stat.S_ISREG(source.st_mode):
            raise Changed(f"{change.link} is gone")
        here = lstat_at(name, dirfd)
        if here is not None and (here.st_dev, here.st_ino) == (source.st_dev, source.st_ino):
            run.ours.add((source.st_dev, source.st_ino))  # linked before a crash (its ctime changed then)
            return []
        if here is None or not stat.S_ISREG(here.st_mode):
            raise Changed("it is not the command's file")
        run.unchanged(src_dir, src_name, source, target)
        temp = f".mcp-guard-{op.entry}.tmp"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=dirfd)
        linked = lstat_at(src_name, src_dir) or source
        os.link(src_name, temp, src_dir_fd=src_dir, dst_dir_fd=dirfd, follow_symlinks=False)
        os.rename(temp, name, src_dir_fd=dirfd, dst_dir_fd=dirfd)
        run.named(linked, lstat_at(name, dirfd))  # a new name changes its ctime, not what it holds
    return []


def pin(history: HistoryStore, op: Op, root: int, run: Run, absolute: str) -> list[Applied]:
    """A name kept for a file with several names while new names of real files are made (``plan._in_order``: two
    such files swapped): made of the file at the change's ``link``, no record (``unpin`` removes it)."""
    del history, absolute
    change = change_of(op)
    with parent(root, change.link) as (src_dir, src_name), parent(root, op.path) as (dirfd, name):
        if name != f".mcp-guard-{op.entry}.pin":
            raise Changed("not a name this step makes")
        source = lstat_at(src_name, src_dir)
        there = lstat_at(name, dirfd)
        if there is not None and source is not None and (there.st_dev, there.st_ino) == (source.st_dev, source.st_ino):
            run.ours.add((source.st_dev, source.st_ino))  # made before a crash
            return []
        if source is None or not stat.S_ISREG(source.st_mode):
            raise Changed(f"{change.link} is gone")
        run.unchanged(src_dir, src_name, source, posixpath.join(op.root, change.link))
        linked = lstat_at(src_name, src_dir) or source
        os.link(src_name, name, src_dir_fd=src_dir, dst_dir_fd=dirfd, follow_symlinks=False)
        run.named(linked, lstat_at(name, dirfd))
    return []


def unpin(history: HistoryStore, op: Op, root: int, run: Run, absolute: str) -> list[Applied]:
    del history, run, absolute
    with contextlib.suppress(FileNotFoundError, Changed), parent(root, op.path) as (dirfd, name):
        there = lstat_at(name, dirfd)
        # Only the name ``pin`` made for this step (a journal names nothing else for it to remove).
        if there is not None and stat.S_ISREG(there.st_mode) and name == f".mcp-guard-{op.entry}.pin":
            os.unlink(name, dir_fd=dirfd)
    return []


NAME_STEPS = {"pin": pin, "unpin": unpin}
