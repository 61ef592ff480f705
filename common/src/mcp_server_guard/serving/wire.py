"""The stdio wire's file descriptors, below the protocol (``serving.stdio``): fds 0 and 1 claimed for the wire (the
process's own stdin reading /dev/null, its stdout going to stderr), the daemon threads that run blocking reads and
writes, and what a pipe says of itself (its capacity, whether the client has read everything written).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import queue
import stat
import struct
import sys
import termios
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

__all__ = ["CHUNK", "IOThread", "claimed_stdio", "pipe_empty", "pipe_size", "pollable", "read_chunk", "write_all"]

CHUNK = 1 << 20

T = TypeVar("T")


class IOThread:
    """One daemon thread running blocking calls in order: a read or write still blocked at exit never holds the
    process (anyio's worker threads are not daemons), and an abandoned call is simply not waited for."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], asyncio.AbstractEventLoop, asyncio.Future[Any]]]
        self._jobs = queue.SimpleQueue()
        threading.Thread(target=self._work, name=name, daemon=True).start()

    async def run(self, fn: Callable[[], T]) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._jobs.put((fn, loop, future))
        return await future

    def _work(self) -> None:
        while True:
            fn, loop, future = self._jobs.get()
            try:
                outcome: tuple[Any, BaseException | None] = (fn(), None)
            except Exception as exc:  # noqa: BLE001 - the thread's top level: handed to the awaiting task
                outcome = (None, exc)
            try:
                loop.call_soon_threadsafe(_settle, future, outcome)
            except RuntimeError:  # the loop is closed: nobody waits any more
                return


def _settle(future: asyncio.Future[Any], outcome: tuple[Any, BaseException | None]) -> None:
    if future.done():  # the awaiting task was cancelled
        return
    result, exc = outcome
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(result)


def read_chunk(fd: int) -> bytes:
    try:
        return os.read(fd, CHUNK)
    except OSError:
        return b""  # EIO, EBADF: the client side is gone, as at EOF


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def pipe_size(fd: int) -> int:
    """The capacity of the pipe ``fd`` writes to; 0 when it is not a pipe (a socket, a file, a terminal)."""
    try:
        return fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ) if stat.S_ISFIFO(os.fstat(fd).st_mode) else 0
    except OSError:
        return 0


def pollable(fd: int) -> bool:
    """Make ``fd`` non-blocking if it is a pipe or a socket (then the event loop polls it); else False."""
    try:
        if not (stat.S_ISFIFO(mode := os.fstat(fd).st_mode) or stat.S_ISSOCK(mode)):
            return False
        os.set_blocking(fd, False)
    except OSError:
        return False
    return True


def pipe_empty(fd: int) -> bool:
    """Nothing the client has yet to read is left in the pipe (FIONREAD works on either end of a pipe)."""
    try:
        unread: int = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
    except OSError:
        return False
    return unread == 0


@contextmanager
def claimed_stdio() -> Iterator[tuple[int, int]]:
    """Private duplicates of fds 0 and 1 for the wire; meanwhile fd 0 reads /dev/null and fd 1 goes to stderr."""
    sys.stdout.flush()
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    try:
        yield wire_in, wire_out
    finally:
        sys.stdout.flush()  # what a handler printed belongs to stderr, not to the wire restored below
        with contextlib.suppress(OSError):
            os.set_blocking(wire_in, True)  # as it was lent to us (the connection polls a pipe non-blocking)
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
