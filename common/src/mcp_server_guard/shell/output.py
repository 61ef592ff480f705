"""A command's output as the server keeps it while it runs: the head and the tail of each stream within the
call's budget (counted as the JSON the reply will hold), the last line for the running display, and the ticker
that reports progress.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Awaitable, Callable
from functools import partial

import anyio

_LINE_KEPT = 512  # bytes of the last output line kept for the running display


PROGRESS_INTERVAL_S = 0.5  # how often a running command reports (the agent CLI wants at least once a second)


# The running display: called with (elapsed seconds, bytes of output so far, the last complete output line).
Progress = Callable[[float, int, str], Awaitable[None]]


# Bytes JSON escapes as \u00XX (6 bytes) and as a two-character escape: what a byte of output costs on the wire.
_JSON_SIX = bytes(c for c in range(32) if c not in (8, 9, 10, 12, 13))


_JSON_TWO = bytes((8, 9, 10, 12, 13, 0x22, 0x5C))


_COST = [6 if c in _JSON_SIX else 2 if c in _JSON_TWO else 1 for c in range(256)]


_BLOCK = 4096


def json_cost(data: bytes) -> int:
    """Bytes that ``data`` (UTF-8 text) takes inside a JSON string: NUL is 6, a quote 2, a letter 1."""
    n = len(data)
    return n + 5 * (n - len(data.translate(None, _JSON_SIX))) + (n - len(data.translate(None, _JSON_TWO)))


def _fit(data: bytes, budget: int, *, from_end: bool) -> bytes:
    """The longest prefix (or suffix) of ``data`` whose JSON cost is within ``budget``."""
    if json_cost(data) <= budget:
        return data
    view = data[::-1] if from_end else data
    used = pos = 0
    while pos < len(view):
        block = view[pos : pos + _BLOCK]
        cost = json_cost(block)
        if used + cost > budget:
            for byte in block:  # the last block, byte by byte
                if used + _COST[byte] > budget:
                    break
                used += _COST[byte]
                pos += 1
            break
        used += cost
        pos += len(block)
    return data[len(data) - pos :] if from_end else data[:pos]


def output_buffers(limit: int, tee: Callable[[int, bytes], None] | None = None) -> tuple[OutputBuffer, OutputBuffer]:
    """stdout's and stderr's buffers for one run (each chunk also to ``tee(stream, chunk)``, when given)."""
    if tee is None:
        return OutputBuffer(limit), OutputBuffer(limit)
    return OutputBuffer(limit, partial(tee, 1)), OutputBuffer(limit, partial(tee, 2))


_PIECE = 64 << 10  # bytes a piece of the kept tail grows to before the next read starts another


class OutputBuffer:
    """Keeps the first and last bytes of a stream, counting the rest.

    ``render`` bounds what the text costs in the reply, not only the raw bytes kept: escaped as JSON
    (a NUL becomes six bytes) it stays within ``limit``, so a flood of control characters cannot
    make a reply many times bigger than asked.
    """

    def __init__(self, limit: int, tee: Callable[[bytes], None] | None = None) -> None:
        self.tee = tee  # also gets every chunk, as it comes (a job's spool)
        self.limit = limit
        self.head_limit = limit // 2
        self.tail_limit = limit - self.head_limit
        self.head = bytearray()
        self.tail: deque[bytearray] = deque()  # pieces of at least _PIECE bytes but the last
        self.tail_size = 0
        self.total = 0
        self.cut = False  # render had to drop bytes (raw overflow, or escaping over budget)
        self.last_line = b""  # the last complete line so far (for the running display), bounded
        self._partial = bytearray()  # the start of the line being written, bounded

    def _track_lines(self, chunk: bytes) -> None:
        end = chunk.rfind(b"\n")
        if end < 0:
            if len(self._partial) < _LINE_KEPT:
                self._partial += chunk[: _LINE_KEPT - len(self._partial)]
            return
        start = chunk.rfind(b"\n", 0, end)
        line = chunk[start + 1 : end] if start >= 0 else bytes(self._partial) + chunk[:end]
        self.last_line = line[:_LINE_KEPT]
        self._partial = bytearray(chunk[end + 1 : end + 1 + _LINE_KEPT])

    def feed(self, chunk: bytes) -> None:
        if self.tee is not None:
            self.tee(chunk)
        self.total += len(chunk)
        self._track_lines(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        # Small reads joined into one piece: a command writing a byte at a time must not cost an object per byte
        # kept (red team 118 F1: 131 MiB for 16 MiB of tail).
        if self.tail and len(self.tail[-1]) < _PIECE:
            self.tail[-1] += chunk
        else:
            self.tail.append(bytearray(chunk))
        self.tail_size += len(chunk)
        while self.tail_size - len(self.tail[0]) >= self.tail_limit:
            self.tail_size -= len(self.tail.popleft())

    @property
    def truncated(self) -> bool:
        return self.cut or self.total > self.head_limit + self.tail_limit

    def render(self) -> str:
        tail = b"".join(self.tail)
        if self.total <= self.head_limit + self.tail_limit:
            whole = (bytes(self.head) + tail).decode("utf-8", "replace").encode("utf-8")
            if json_cost(whole) <= self.limit:
                return whole.decode("utf-8")
            head, tail = whole[: len(whole) // 2], whole[len(whole) // 2 :]
        else:
            head = bytes(self.head).decode("utf-8", "replace").encode("utf-8")
            tail = tail[-self.tail_limit :].decode("utf-8", "replace").encode("utf-8")
        self.cut = True
        marker_room = 64
        head = _fit(head, max(self.head_limit - marker_room, 0), from_end=False)
        tail = _fit(tail, max(self.tail_limit - marker_room, 0), from_end=True)
        omitted = max(self.total - len(head) - len(tail), 0)
        return (
            head.decode("utf-8", "ignore")  # a character cut in two at the edge is dropped
            + f"\n[... {omitted} bytes omitted ...]\n"  # ASCII: a non-ASCII marker doubles the string's memory
            + tail.decode("utf-8", "ignore")
        )


class Ticker:
    """Reports a running command's progress every PROGRESS_INTERVAL_S until stopped (nothing without a callback)."""

    def __init__(self, progress: Progress | None, out: OutputBuffer, err: OutputBuffer, started: float) -> None:
        self.progress, self.out, self.err, self.started = progress, out, err, started
        self.scope = anyio.CancelScope()

    async def run(self) -> None:
        if self.progress is None:
            return
        with self.scope:
            while True:
                await anyio.sleep(PROGRESS_INTERVAL_S)
                line = self.out.last_line or self.err.last_line
                elapsed = round(time.perf_counter() - self.started, 3)
                with contextlib.suppress(Exception):  # a display that fails never fails the command
                    await self.progress(elapsed, self.out.total + self.err.total, line.decode("utf-8", "replace"))

    def stop(self) -> None:
        self.scope.cancel()


__all__ = ["PROGRESS_INTERVAL_S", "OutputBuffer", "Progress", "Ticker", "json_cost", "output_buffers"]
