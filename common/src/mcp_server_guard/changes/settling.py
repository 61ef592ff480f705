"""What a run's records say of the tree: each record's file as the whole run left it (:func:`settled`), whether a
step done before a crash left its file as recorded (:func:`left_as_recorded`), and the paths an undo put back that
carry overlayfs's attribute names (:func:`marked_back`).
Each looked at beneath its root, no link followed. Used by ``changes.apply`` at the end of a run."""

from __future__ import annotations

import contextlib
import posixpath
import stat
from collections.abc import Iterator
from dataclasses import replace

from mcp_server_guard.changes.escapes import marked
from mcp_server_guard.changes.nofollow import Changed, identity, lstat_at, lstat_beneath, parent
from mcp_server_guard.changes.plan import Applied, Op, Outcome, left_as
from mcp_server_guard.changes.revert import root_of as _root_of
from mcp_server_guard.paths import within

__all__ = ["left_as_recorded", "marked_back", "settled"]


def settled(record: Applied, roots: dict[str, int]) -> Applied:
    """A record's ``after`` (and the mode and attributes it left a regular file with) as the whole run left it: a
    later step may have changed the same inode through another of its names (its mode, time or attributes), which
    is still what this step put there."""
    if len(record.after) < 4 or record.tree:
        return record
    with contextlib.suppress(PermissionError), _at(record, roots) as found:
        if found is not None:
            now = lstat_at(found[1], found[0])
            if now is not None and (now.st_dev, now.st_ino) == record.after[:2]:
                if record.mode < 0 or not stat.S_ISREG(now.st_mode):
                    return replace(record, after=identity(now))
                # (only another name's step can have changed the attributes: read again only then)
                attrs = left_as(found[0], found[1], now)["attrs"] if now.st_nlink > 1 else record.attrs
                return replace(record, after=identity(now), mode=stat.S_IMODE(now.st_mode), attrs=attrs,
                               links=now.st_nlink)  # fmt: skip
    return record


@contextlib.contextmanager
def _at(record: Applied, roots: dict[str, int]) -> Iterator[tuple[int, str] | None]:
    """The directory (open) and name of a record's path beneath its root, no link followed; None where it cannot be
    reached so (or is a root itself)."""
    root = _root_of(record.path, list(roots))
    if root is None or record.path == root:
        yield None
        return
    with contextlib.ExitStack() as stack:
        try:
            dirfd, name = stack.enter_context(parent(roots[root], posixpath.relpath(record.path, root)))
        except (Changed, OSError):
            yield None
            return
        yield dirfd, name


def marked_back(outcome: Outcome, roots: dict[str, int]) -> list[str]:
    """The paths an undo put back that carry overlayfs's attribute names (the project's own): looked at beneath
    their root, no link followed."""
    found: list[str] = []
    for record in outcome.applied:
        if record.kind not in ("file", "dir"):
            continue
        with _at(record, roots) as at_:
            if at_ is None:
                continue
            st = lstat_at(at_[1], at_[0])
            if st is not None and not stat.S_ISLNK(st.st_mode) and marked(f"/proc/self/fd/{at_[0]}/{at_[1]}"):
                found.append(record.path)
    return found


def left_as_recorded(op: Op, record: Applied) -> bool:
    """Whether the file a step done before a crash left at ``record.path`` is still that very file, as it left it.
    Threat: its inode freed meanwhile (someone replaced it: file_write between the crash and the next start) and
    its number reused by someone else's new file, taken for ours — that file deleted or replaced unasked by the
    steps left (red team 69, a rare race)."""
    if len(record.after) < 4 or not within(record.path, op.root):
        return True  # (no identity recorded: as before)
    now = lstat_beneath(op.root, posixpath.relpath(record.path, op.root))
    return now is not None and identity(now) == tuple(record.after[:4])
