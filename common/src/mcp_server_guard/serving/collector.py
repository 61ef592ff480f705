"""Start-up time: the cyclic garbage collector held off until a server's first result is out (issue 44).

A server's start allocates some 60,000-80,000 objects that live as long as it does (modules, classes, models,
the policy) and almost no cyclic garbage (about a thousand small objects: functions, descriptors, a closed store).
The collector's young generations still ran over them about a hundred times before the first result, a twentieth
of its time. With the start-up front running (``front.run_console``), the collector is held off from then until
the front has written its first call's answer, the SDK takes the wire (``front.take_front``), or
``PAUSE_BOUND_S`` has gone by (checked while the front serves: ``Front.wait_for_sdk``), whichever comes first;
then it is turned back on after one full collection, which finds what the start left. Nothing a client sees
depends on when the collector runs; the start's objects end in the oldest generation, where they would have gone.
A process that had turned the collector off itself keeps it off.
"""

from __future__ import annotations

import gc
import logging
import threading
import time

__all__ = ["PAUSE_BOUND_S", "pause", "paused", "resume", "resume_if_due"]

PAUSE_BOUND_S = 10.0  # the collector is back on this long after the pause at the latest (a first call that never ends)

log = logging.getLogger("mcp_server_guard.front")
_lock = threading.Lock()
_paused_at: float | None = None  # time.monotonic() of the pause; None: not paused by us


def pause() -> None:
    """Hold the collector off from now (a process that turned it off itself keeps it off, and resumes nothing)."""
    global _paused_at  # noqa: PLW0603 - one pause per process
    with _lock:
        if _paused_at is None and gc.isenabled():
            gc.disable()
            _paused_at = time.monotonic()


def paused() -> bool:
    """Whether the collector is held off by ``pause`` now."""
    return _paused_at is not None


def resume(why: str) -> None:
    """The collector back on after one full collection (what the start left is collected then, not in a hundred
    young collections on the way to the first result); nothing when it is not held off by ``pause``."""
    global _paused_at  # noqa: PLW0603
    with _lock:
        if _paused_at is None:
            return
        _paused_at = None
        gc.enable()
    collected = gc.collect()
    log.debug("the garbage collector runs again (%s): %d objects collected", why, collected)


def resume_if_due() -> None:
    """``resume`` once ``PAUSE_BOUND_S`` has gone by since the pause."""
    started = _paused_at
    if started is not None and time.monotonic() - started >= PAUSE_BOUND_S:
        resume(f"{PAUSE_BOUND_S:.0f} s after the start")
