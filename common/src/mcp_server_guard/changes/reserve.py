"""Room kept for a run's own writes: the journal's lines, the rollback's plan, the call's record, and what going
back keeps — so that a disk that fills up midway (another program, or the run's own pre-images) never leaves a run
that can neither go on nor go back.

Threat (red team 73): the steps of an apply took the last blocks of the history's disk; then the journal's next line,
the rollback's line and the call's record could not be written, the apply raised, and a tree half applied stayed
with no record (its next start found a torn journal). A :class:`Reserve` is a file of the history store allocated
(``posix_fallocate``: real blocks) after the journal and before the first step; the run gives it back at the first
failure for want of room (then writes the rollback and goes back), and before it writes the call's record. A
server killed meanwhile leaves it beside its journal; the next start's run of that journal takes it over.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

__all__ = ["Reserve", "reserve_size"]

_CAP = 256 << 20  # bytes held at most (a run of 150,000 steps keeps less than it would need to go back whole)
_FLOOR = 1 << 20
_STEP = 4096  # what going back over one step may keep: a pre-image's metadata file


def reserve_size(journal_bytes: int, steps: int) -> int:
    """What a run whose plan's journal line takes ``journal_bytes`` may need to write to finish or go back: its
    steps' lines and the rollback's plan and lines (each about the plan's size), the call's record, and a metadata
    file for each step gone back over."""
    return min(_CAP, _FLOOR + 4 * journal_bytes + steps * _STEP)


class Reserve:
    """A reserved file of the history store (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def take(cls, directory: Path, audit_id: str, size: int) -> Reserve:
        """``size`` bytes of the disk of ``directory`` held for run ``audit_id``. Raises OSError (ENOSPC) when the
        disk has not that room; on a file system that cannot allocate ahead, holds nothing."""
        path = directory / f"reserve-{audit_id}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.posix_fallocate(fd, 0, size)
        except OSError as exc:
            path.unlink(missing_ok=True)
            if exc.errno in (errno.EOPNOTSUPP, errno.EINVAL):
                return cls(path)  # (nothing held: the run goes on as it did before)
            raise
        finally:
            os.close(fd)
        return cls(path)

    @classmethod
    def left(cls, directory: Path, audit_id: str) -> Reserve:
        """The reserve a killed run left beside its journal (if any): taken over by the run that finishes it."""
        return cls(directory / f"reserve-{audit_id}")

    def give_back(self) -> None:
        """Let the run (and everyone) use the room: at the first failure for want of it, and before the record."""
        with contextlib.suppress(OSError):
            self.path.unlink(missing_ok=True)
