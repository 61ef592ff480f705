"""A bound on the way out: once the client is gone or a stop signal came, the process ends within seconds.

The orderly exit cancels the calls in flight, answers what is pending, runs the server's clean-ups and returns.
A call may not let go in time: a thread blocked in a system call cannot be cancelled (a file on a stalled file
system, a peer that stopped answering), and a clean-up may wait on a process that was stopped. Threat: a client
that closed stdin (an agent CLI quitting, its user pressing Ctrl-C) leaves a server running — holding locks,
its box and every command in it — for as long as that call likes.

So the first sign of the end (:func:`arm`: stdin EOF, a broken stdout, SIGTERM/SIGHUP) starts a clock on a
daemon thread (:func:`watch`). If the process is still there ``EXIT_GRACE_S`` later, the clean-ups run once
more on their own bounded thread (they are idempotent: kill every command, close the box) and the process
ends with ``os._exit`` — the exit code the orderly path would have given.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

__all__ = ["CLEANUP_BOUND_S", "EXIT_GRACE_S", "arm", "armed", "watch"]

log = logging.getLogger("mcp_server_guard.serving")

EXIT_GRACE_S = 3.0  # the orderly exit normally takes well under a second
CLEANUP_BOUND_S = 2.0  # the forced exit waits this long at most for the clean-ups

_armed = threading.Event()
_code = [0]  # the exit code the first arm() gave
_lock = threading.Lock()


def arm(code: int = 0, why: str = "") -> None:
    """The session is over (the first call decides the exit code); the clock starts."""
    with _lock:
        if _armed.is_set():
            return
        _code[0] = code
        _armed.set()
    log.debug("on the way out (%s): the process ends within %.0f s", why or "stop", EXIT_GRACE_S)


def armed() -> bool:
    return _armed.is_set()


def watch(cleanup: Callable[[], None], grace: float = EXIT_GRACE_S) -> threading.Thread:
    """Start the watchdog: once armed, wait ``grace`` seconds for the orderly exit, then clean up (bounded) and
    end the process."""

    def run() -> None:
        _armed.wait()
        threading.Event().wait(grace)  # the orderly exit ends the process before this returns, as a rule
        log.warning("a call did not end %.0f s after the session ended; stopping it and exiting", grace)
        worker = threading.Thread(target=cleanup, name="mcp-guard-forced-cleanup", daemon=True)
        worker.start()
        worker.join(CLEANUP_BOUND_S)
        os._exit(_code[0])

    thread = threading.Thread(target=run, name="mcp-guard-exit-watchdog", daemon=True)
    thread.start()
    return thread
