"""Fault injection for the crash tests: a process killed at a chosen step of an apply, an undo or a write.

Every step that changes the real tree or the history store passes a numbered point (:func:`point`). With
``MCP_GUARD_KILL_AT=N`` in its environment a process sends itself SIGKILL when it reaches the N-th point (counting
from 1), the way SQLite's tests crash a writer at each of its steps; ``MCP_GUARD_KILL_TRACE=FILE`` appends each
point's number and label to FILE (a test learns how many points a run has, and where each is). Without them a
point costs one comparison. Nothing else reads these variables: a server started by a user never has them.
"""

from __future__ import annotations

import os
import signal
import threading

__all__ = ["point", "reset"]

_kill_at = int(os.environ.get("MCP_GUARD_KILL_AT", "0") or 0)
_trace = os.environ.get("MCP_GUARD_KILL_TRACE", "")
_count = 0
_lock = threading.Lock()


def point(label: str) -> None:
    """A step is about to happen (``label`` says which): the process dies here when asked to."""
    global _count  # noqa: PLW0603 - one counter per process, by design
    if not _kill_at and not _trace:
        return
    with _lock:
        _count += 1
        number = _count
    if _trace:
        with open(_trace, "a", encoding="utf-8") as out:
            out.write(f"{number} {label}\n")
    if number == _kill_at:
        os.kill(os.getpid(), signal.SIGKILL)


def reset(kill_at: int = 0, trace: str = "") -> None:
    """For a test in a forked child: kill at point ``kill_at`` of what follows (0: never), tracing to ``trace``."""
    global _kill_at, _trace, _count
    with _lock:
        _kill_at, _trace, _count = kill_at, trace, 0
