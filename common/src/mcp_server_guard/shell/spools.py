"""Spools and kept outputs: where the output of a job, or of a command whose result was cut, is kept, and how
such an output is read in ranges as an MCP resource.

A spool keeps one stream outside the jail, under the server's state directory: the first ``kept_output_bytes``
in a file and the last ``TAIL_KEPT`` in memory; what lies between (a stream longer than the cap) is counted,
not kept. The same spools keep the full output of an ordinary command whose result was cut, readable as an
MCP resource for ``kept_output_seconds``.

Such a resource is read in ranges (``shell-exec://output/<id>/<stream>?offset=N&length=M``; the plain URI is the
range from 0): each answer holds at most ``MAX_RANGE_BYTES`` (``RANGE_BYTES`` unless asked), read from the spool
with ``pread`` into one buffer that also holds its first line, which says which bytes it holds, of how many, and
the URI of the next range. A range never splits a character: it starts at the first byte of the character its
offset falls in, and ends before a character it would cut (after it, when that character is all it holds).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from mcp_server_guard.paths import private_dirs
from mcp_server_guard.policy import ShellPolicy
from mcp_server_guard.shell.output import json_cost

__all__ = [
    "MAX_RANGE_BYTES",
    "OUTPUT_TEMPLATE",
    "RANGE_BYTES",
    "KeptOutputs",
    "RangeError",
    "Spool",
    "output_uri",
    "parse_range",
    "read_output",
]

log = logging.getLogger("mcp_server_guard.jobs")  # the logger these spools always wrote to

TAIL_KEPT = 1 << 20
MAX_KEPT = 8  # cut outputs kept at once (each up to kept_output_bytes per stream); the oldest goes first
URI_PREFIX = "shell-exec://output/"
OUTPUT_TEMPLATE = URI_PREFIX + "{output_id}/{stream}{?offset,length}"
RANGE_BYTES = 1 << 20  # what one read of a kept output answers unless it asks for a length
MAX_RANGE_BYTES = 4 << 20  # the most one read answers: a server holds a few copies of an answer while it sends it


def output_uri(output_id: str, stream: str, offset: int = 0, length: int | None = None) -> str:
    """The URI reading ``stream`` of ``output_id`` from ``offset`` (``length`` bytes; RANGE_BYTES when None)."""
    query = [f"offset={offset}"] if offset else []
    if length is not None:
        query.append(f"length={length}")
    return f"{URI_PREFIX}{output_id}/{stream}" + ("?" + "&".join(query) if query else "")


class Spool:
    """One stream's bytes: the first ``cap`` in a file (opened once ``lazy_after`` bytes came, or at once), the
    last ``TAIL_KEPT`` in memory, the total counted."""

    def __init__(self, path: Path, cap: int, *, lazy_after: int = 0) -> None:
        self.path = path
        self.cap = cap
        self.lazy_after = lazy_after
        self.total = 0
        self._fd: int | None = None
        self._pending = bytearray()  # before the file is opened (lazy)
        self._tail = bytearray()
        if lazy_after == 0:
            self._open()

    def _open(self) -> None:
        # The directory appears with the first spool that reaches the disk (not on every call's way).
        private_dirs(self.path.parent)
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        if self._pending:
            os.write(self._fd, self._pending[: self.cap])
            self._pending = bytearray()

    @property
    def on_disk(self) -> bool:
        return self._fd is not None

    def feed(self, chunk: bytes) -> None:
        start = self.total
        self.total += len(chunk)
        if self.total > self.cap:  # the memory tail holds only what lies past the file's first cap bytes
            self._tail += chunk[max(0, self.cap - start) :]
            if len(self._tail) > TAIL_KEPT:
                del self._tail[: len(self._tail) - TAIL_KEPT]
        if start >= self.cap:
            return
        part = chunk[: self.cap - start]
        if self._fd is None:
            self._pending += part
            if self.total > self.lazy_after:
                try:
                    self._open()
                except OSError as exc:  # a full disk costs the full output, never the command
                    log.warning("output spool %s: %s", self.path, exc)
                    self.cap = 0
            return
        try:
            os.pwrite(self._fd, part, start)
        except OSError as exc:
            log.warning("output spool %s: %s", self.path, exc)
            self.cap = start

    def parts(self, start: int, end: int) -> tuple[bytes, int, bytes]:
        """[start, end) as kept: the part from the file, how many bytes after it are not kept (the middle of a
        stream longer than the cap), and the part from the in-memory tail."""
        end = min(end, self.total)
        first = b""
        kept_to = min(self.cap, self.total)
        pos = start
        if pos < min(end, kept_to):
            upto = min(end, kept_to)
            first = os.pread(self._fd, upto - pos, pos) if self._fd is not None else bytes(self._pending[pos:upto])
            pos = upto
        if pos >= end:
            return first, 0, b""
        tail_from = self.total - len(self._tail)
        if end <= tail_from:
            return first, end - pos, b""
        begin = max(pos, tail_from)
        return first, begin - pos, bytes(self._tail[begin - tail_from : end - tail_from])

    def kept(self) -> tuple[int, int]:
        """(head, tail): bytes [0, head) are in the file, [tail, total) in memory; what lies between was not kept."""
        head = min(self.cap, self.total)
        return head, max(self.total - len(self._tail), head)

    def read_into(self, view: memoryview, pos: int) -> None:
        """Fill ``view`` with the bytes from ``pos``, all kept in one part (the file or the memory tail)."""
        head, tail = self.kept()
        size = len(view)
        if pos + size <= head:
            if self._fd is None:
                view[:] = self._pending[pos : pos + size]
                return
            done = 0
            while done < size:  # a regular file answers in full; the loop only guards a short read
                got = os.preadv(self._fd, [view[done:]], pos + done)
                if got <= 0:
                    raise OSError(f"output spool {self.path}: {size - done} bytes missing at {pos + done}")
                done += got
            return
        assert pos >= tail and pos + size <= self.total, "a range lies within one kept part"
        begin = pos - (self.total - len(self._tail))
        with memoryview(self._tail) as kept:  # released at once: the tail must stay resizable
            view[:] = kept[begin : begin + size]

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(OSError):
            self.path.unlink()


class RangeError(ValueError):
    """A range of a kept output that cannot be read (a malformed offset or length, an offset past the end)."""


def parse_range(offset: str | None, length: str | None) -> tuple[int, int | None]:
    """``offset`` and ``length`` as a URI's query gave them (absent: None): whole numbers, or RangeError."""

    def number(value: str, name: str, least: int) -> int:
        text = value.strip()
        digits = text.lstrip("0") or "0"
        # More than 19 digits is past any output (and int() refuses 4300 digits with a ValueError of its own).
        number = int(digits) if text.isascii() and text.isdigit() and len(digits) <= 19 else 10**19
        if not text.isascii() or not text.isdigit() or number < least:
            raise RangeError(f"{name} must be a whole number of bytes, {least} or more: got {value!r}")
        return number

    start = number(offset, "offset", 0) if offset is not None else 0
    return start, number(length, "length", 1) if length is not None else None


_HEADER_ROOM = 1024  # bytes reserved before a range's text for its first line (ids and URIs this server makes)
_FIT_BLOCK = 64 << 10


def _sequence_length(lead: int) -> int:
    """How many bytes the UTF-8 character starting with ``lead`` has (1 for ASCII and for stray bytes)."""
    return 2 if 0xC0 <= lead < 0xE0 else 3 if 0xE0 <= lead < 0xF0 else 4 if 0xF0 <= lead < 0xF8 else 1


def _boundary(data: memoryview, n: int) -> int:
    """``n``, or the first byte of the character byte ``n`` of ``data`` falls inside of; at the end of ``data``,
    the first byte of a character the end cuts. Looks back 3 bytes at most (no UTF-8 character is longer)."""
    if n < len(data) and data[n] & 0xC0 != 0x80:
        return n  # ASCII or a lead byte: a character starts here
    for back in range(1, min(n, 3) + 1):
        byte = data[n - back]
        if byte & 0xC0 != 0x80:
            return n - back if _sequence_length(byte) > back else n
    return n  # stray continuation bytes: no character to keep whole


def _fitting(data: memoryview, budget: int) -> int:
    """How many bytes from the start of ``data`` take at most ``budget`` bytes escaped in a JSON string (a NUL
    takes six): an answer of control characters is no bigger on the wire than one of letters."""
    used = pos = 0
    while pos < len(data):
        block = bytes(data[pos : pos + _FIT_BLOCK])
        cost = json_cost(block)
        if used + cost > budget:
            low, high = 0, len(block)  # the longest prefix of this block that fits: by halves
            while low < high:
                mid = (low + high + 1) // 2
                if used + json_cost(block[:mid]) <= budget:
                    low = mid
                else:
                    high = mid - 1
            return pos + low
        used += cost
        pos += len(block)
    return pos


_WIDE = re.compile(rb"[\xc4-\xef]")  # leads of characters U+0100-U+FFFF: Python keeps them in 2 bytes each
_WIDEST = re.compile(rb"[\xf0-\xf7]")  # leads of characters beyond U+FFFF: 4 bytes a character


def _roomy(data: memoryview, n: int, size: int) -> int:
    """At most ``n`` bytes of ``data`` whose text takes at most about ``size`` bytes in memory: Python stores a
    whole text at the width of its widest character, so one emoji in 4 MiB of ASCII would take 16 MiB. Such a
    range ends before its first wider character, or holds a half (a quarter) of ``size``."""
    if (widest := _WIDEST.search(data, 0, n)) is not None:
        n = max(widest.start(), min(n, size // 4))
    if (wide := _WIDE.search(data, 0, n)) is not None:
        n = max(wide.start(), min(n, size // 2))
    return n


def read_output(output_id: str, stream: str, spool: Spool, offset: int, length: int | None, *, growing: bool) -> str:
    """One answer for ``stream`` of ``output_id`` from ``offset``: a first line saying which bytes it holds, of
    how many, and the URI of the next range (or that this is the end), then those bytes as text.

    Bounded: at most ``length`` (RANGE_BYTES when None, never more than MAX_RANGE_BYTES) bytes, counted as they
    are escaped in JSON; read with pread into one buffer that has room for the first line before the bytes, and
    decoded once. A range never splits a character (see the module docstring); a ``growing`` stream (a job still
    running) ends its last range before a character not yet written whole.
    """
    size = min(length or RANGE_BYTES, MAX_RANGE_BYTES)
    total = spool.total
    name = f"{stream} of {output_id}"
    so_far = " so far" if growing else ""
    if offset > total:
        raise RangeError(f"offset {offset} is past the end of {name} ({total} bytes{so_far})")
    head, tail = spool.kept()
    if head <= offset < tail:
        return (
            f"[{name}: bytes {offset}-{tail} of {total}{so_far} were not kept (only the first {head} bytes and the "
            f"last {total - tail} are); next range: {output_uri(output_id, stream, tail, length)}]\n"
        )
    low, high = (0, head) if offset < head else (tail, total)
    start = offset
    if low < offset < high:  # an offset inside a character: from its first byte, so that no byte is lost
        before = max(low, offset - 3)
        probe = bytearray(offset + 1 - before)
        spool.read_into(memoryview(probe), before)
        start = before + _boundary(memoryview(probe), offset - before)
    # One byte past the range, when there is one, tells whether the range's end cuts a character (and a range of
    # fewer than 4 bytes may have to hold one whole character of 4).
    buf = bytearray(_HEADER_ROOM + min(max(size + 1, 4), high - start))
    data = memoryview(buf)[_HEADER_ROOM:]
    spool.read_into(data, start)
    n = _roomy(data, _fitting(data[:size], size), size)
    if n < len(data) or (growing and start + n == total):
        # Ends before the character it would cut; a running job's last one, not yet whole, waits for a later
        # range; a range that would hold part of one character only holds all of it.
        cut = _boundary(data, n)
        n = cut if cut > 0 or n == len(data) else min(_sequence_length(data[0]), len(data))
    end = start + n
    following = tail if end == head < tail else end
    if growing and (following == total or end == start):  # nothing more to read now (or only half a character)
        more = f"the end so far; more comes while it runs: {output_uri(output_id, stream, following, length)}"
    elif following < total:
        more = f"next range: {output_uri(output_id, stream, following, length)}"
    else:
        more = "the end"
    skipped = f"; bytes {head}-{tail} were not kept" if end == head < tail else ""
    first = f"[{name}: bytes {start}-{end} of {total}{so_far}{skipped}; {more}]\n".encode()
    if len(first) > _HEADER_ROOM:  # not with the ids and streams this server makes; correct all the same
        return first.decode() + str(data[:n], "utf-8", "replace")
    begin = _HEADER_ROOM - len(first)
    buf[begin:_HEADER_ROOM] = first
    return str(memoryview(buf)[begin : _HEADER_ROOM + n], "utf-8", "replace")


@dataclass
class _Kept:
    spools: dict[str, Spool]
    expires: float


class KeptOutputs:
    """Full outputs of cut results, readable for a while as resources (``shell-exec://output/<id>/<stream>``, in
    ranges)."""

    def __init__(self, policy: ShellPolicy, spool_dir: Path) -> None:
        self.policy = policy
        self.spool_dir = spool_dir
        self._kept: dict[str, _Kept] = {}

    def spools(self, lazy_after: int) -> dict[str, Spool]:
        """Fresh spools for one run: nothing touches the disk unless the output grows past ``lazy_after``."""
        if self.policy.kept_output_bytes == 0 or self.policy.kept_output_seconds == 0:
            return {}
        tag = secrets.token_hex(8)
        return {
            name: Spool(self.spool_dir / f"{tag}.{name}", self.policy.kept_output_bytes, lazy_after=lazy_after)
            for name in ("stdout", "stderr")
        }

    def keep(self, spools: dict[str, Spool]) -> str:
        """Keep these spools readable for kept_output_seconds; their id."""
        self.expire()
        output_id = secrets.token_hex(8)
        self._kept[output_id] = _Kept(spools, time.monotonic() + self.policy.kept_output_seconds)
        # Bounded disk: a model printing 50 MB in a loop keeps the last MAX_KEPT outputs, not all of them.
        while len(self._kept) > MAX_KEPT:
            oldest = next(iter(self._kept))
            for spool in self._kept.pop(oldest).spools.values():
                spool.close()
        return output_id

    def spool(self, output_id: str, stream: str) -> Spool | None:
        """The spool of ``stream`` of a kept output (read in ranges: ``read_output``); None when not kept."""
        self.expire()
        kept = self._kept.get(output_id)
        return kept.spools.get(stream) if kept is not None else None

    def expire(self) -> None:
        now = time.monotonic()
        for output_id, kept in list(self._kept.items()):
            if kept.expires <= now:
                del self._kept[output_id]
                for spool in kept.spools.values():
                    spool.close()

    def close(self) -> None:
        for kept in self._kept.values():
            for spool in kept.spools.values():
                spool.close()
        self._kept.clear()
        shutil.rmtree(self.spool_dir, ignore_errors=True)
