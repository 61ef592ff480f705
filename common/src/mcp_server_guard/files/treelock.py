"""One writer at a time per file system, across every server of this user: the tree lock.

Threat: two servers (two agents, or shell_exec and file_write) judging and writing the same project at once.
Each judgement is right on its own — server A's change set makes ``src/HEAD`` and ``src/objects`` and a config,
server B's makes ``src/refs`` — and together they make a git dir whose config runs programs. So a change is
judged and applied (a command's change set, a file_write) while holding an ``flock`` that every server takes:
``$XDG_STATE_HOME/mcp-guard/locks/<device>.lock``, one per file system (a project's roots and their copies are
on one; nested roots of different servers are on the same). The state directory is hidden from every tool, so
no command can hold the lock. Waiting is bounded: past it, ``TreeBusy``.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator

from mcp_server_guard.paths import private_dirs, state_dir

__all__ = ["TREE_WAIT_S", "TreeBusy", "breathe", "flock_until", "tree_lock"]

log = logging.getLogger("mcp_server_guard.files")

TREE_WAIT_S = 30.0  # at most this long for another server's apply (a 20,000-file one takes about 2 s)
_POLL_S = 0.005


class TreeBusy(Exception):
    """Another server held the tree lock past the wait."""


@contextlib.contextmanager
def tree_lock(devices: Iterable[int], wait_s: float = TREE_WAIT_S) -> Iterator[None]:
    """Hold the tree lock of each file system in ``devices`` (taken in order: no two holders wait on each other).
    Where the lock files cannot be made (a read-only state directory) it goes on without, and says so once."""
    directory = state_dir() / "locks"
    fds: list[int] = []
    deadline = time.monotonic() + wait_s
    try:
        try:
            private_dirs(directory)
            for device in sorted(set(devices)):
                fds.append(os.open(directory / f"{device}.lock", _LOCK_FILE, 0o600))
        except OSError as exc:
            _warn_once(f"no tree lock ({exc.strerror or exc}): writers of other servers are not kept apart")
            for fd in fds:
                os.close(fd)
            fds = []
        for fd in fds:
            if not flock_until(fd, deadline):
                raise TreeBusy(f"another server kept the project busy for {wait_s:.0f} s")
        outer = getattr(_held, "fds", None), getattr(_held, "since", 0.0)
        _held.fds, _held.since = fds, time.monotonic()
        try:
            yield
        finally:
            _held.fds, _held.since = outer
    finally:
        for fd in fds:
            os.close(fd)  # closing releases the lock


_held = threading.local()  # the tree locks this thread holds (fds), and since when it last held them unbroken
BREATHE_S = 2.0  # a run holding the tree lock lets other servers' writers in at least this often
_GAP_S = 0.05  # long enough for a writer that polls every few milliseconds to take the lock


def breathe(every_s: float = BREATHE_S) -> None:
    """In a long run under :func:`tree_lock` (an apply of 150,000 files): past ``every_s`` since the lock was
    taken, let go of it for a moment and take it again, so that another server's call or write never waits past
    its bound. Each step of the run checks its path again, so what others change meanwhile is a conflict, never
    overwritten. Raises TreeBusy when the lock does not come back within TREE_WAIT_S."""
    fds = getattr(_held, "fds", None)
    if not fds or time.monotonic() - _held.since < every_s:
        return
    for fd in fds:
        fcntl.flock(fd, fcntl.LOCK_UN)
    time.sleep(_GAP_S)
    deadline = time.monotonic() + TREE_WAIT_S
    for fd in fds:
        if not flock_until(fd, deadline):
            raise TreeBusy(f"another server kept the project busy for {TREE_WAIT_S:.0f} s")
    _held.since = time.monotonic()


def flock_until(fd: int, deadline: float, poll_s: float = _POLL_S) -> bool:
    """Take an exclusive ``flock`` on ``fd``, waiting until ``deadline`` (monotonic) at most; False if not taken."""
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > deadline:
                return False
            time.sleep(poll_s)


_LOCK_FILE = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        log.warning("%s", message)
