"""Streaming text reads: one pass hashes the whole file and counts its lines; a page is read from where it starts.

Memory stays bounded by the page size plus one chunk, whatever the file's size. What a pass learns (the hash, the
number of lines, where every 64 KiB's first line starts, where each page served ended) is remembered for the file
as long as it is unchanged, so reading a file page by page costs one pass plus the pages, not one pass per page.
"""

from __future__ import annotations

import bisect
import codecs
import hashlib
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

CHUNK = 1 << 20
MARK_EVERY = 64 << 10  # a pass notes where the first line after every this many bytes starts
_REMEMBERED_FILES = 32
# A file changed in the same clock tick as the pass would keep its stat identity (timestamps are coarse):
# only a file unchanged for this long before the pass is remembered (git's "racily clean" rule).
_SETTLED_NS = 2_000_000_000
# Encodings where b"\n" is the newline byte and never part of another character.
_ASCII_COMPATIBLE_NEWLINE = ("utf-8", "ascii", "latin-1", "iso8859", "cp1", "mac-", "koi8", "cp8", "cp4")


@dataclass(frozen=True)
class Page:
    content: str
    total_lines: int
    start_line: int  # first line returned (1-based)
    end_line: int  # last line returned, start_line - 1 when none
    next_offset: int | None  # line to pass as offset for the next page
    truncated: bool  # the byte cap stopped the page before the requested range ended
    line_cut: bool  # a single line longer than the cap was cut
    content_bytes: int
    sha256: str
    replaced: bool  # undecodable bytes were replaced with U+FFFD


def _newline_is_byte(encoding: str) -> bool:
    return encoding.startswith(_ASCII_COMPATIBLE_NEWLINE)


def _cut_utf8(text: str, budget: int) -> str:
    return text.encode("utf-8", "surrogatepass")[:budget].decode("utf-8", "ignore")


@dataclass
class _Facts:
    """What one pass over an unchanged file learned."""

    sha256: str
    total_lines: int
    size: int
    lines: list[int] = field(default_factory=list)  # sorted line numbers ...
    starts: list[int] = field(default_factory=list)  # ... and the byte offset where each starts

    def mark(self, line: int, start: int) -> None:
        i = bisect.bisect_left(self.lines, line)
        if i == len(self.lines) or self.lines[i] != line:
            self.lines.insert(i, line)
            self.starts.insert(i, start)

    def nearest(self, line: int) -> tuple[int, int]:
        """The known line at or before ``line`` and its start; (1, 0) when none is known."""
        i = bisect.bisect_right(self.lines, line) - 1
        return (self.lines[i], self.starts[i]) if i >= 0 else (1, 0)


_Key = tuple[int, int, int, int, int, str, int]
_remembered: OrderedDict[_Key, _Facts] = OrderedDict()
_remembered_lock = threading.Lock()


def _identity(st: os.stat_result, encoding: str, bom: int) -> _Key:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, encoding, bom)


def forget_remembered() -> None:
    """Drop what passes learned (tests; nothing else needs it: a changed file has a new identity)."""
    with _remembered_lock:
        _remembered.clear()


def _pass(fd: int, size: int) -> _Facts:
    """Hash the whole file and count its lines, noting where the first line after each MARK_EVERY bytes starts."""
    hasher = hashlib.sha256()
    facts = _Facts(sha256="", total_lines=0, size=size)
    newlines = 0  # before pos
    pos = 0
    next_mark = MARK_EVERY
    last = b""
    while chunk := os.pread(fd, CHUNK, pos):
        hasher.update(chunk)
        counted = 0  # newlines of this chunk already added to `newlines`
        while next_mark < pos + len(chunk):
            j = chunk.find(b"\n", next_mark - pos)
            if j < 0:
                break
            newlines += chunk.count(b"\n", counted, j + 1)
            counted = j + 1
            facts.mark(newlines + 1, pos + j + 1)
            next_mark = max(next_mark + MARK_EVERY, pos + j + 1)
        newlines += chunk.count(b"\n", counted)
        pos += len(chunk)
        last = chunk[-1:]
    facts.sha256 = hasher.hexdigest()
    facts.size = pos
    facts.total_lines = newlines + (1 if last and last != b"\n" else 0)
    return facts


def _facts_for(fd: int, st: os.stat_result | None, encoding: str, bom: int) -> _Facts:
    if st is None:
        return _pass(fd, 0)
    key = _identity(st, encoding, bom)
    with _remembered_lock:
        known = _remembered.get(key)
        if known is not None:
            _remembered.move_to_end(key)
            return known
    began = time.time_ns()
    facts = _pass(fd, st.st_size)
    after = os.fstat(fd)
    settled = max(st.st_mtime_ns, st.st_ctime_ns) < began - _SETTLED_NS
    if settled and _identity(after, encoding, bom) == key and facts.size == st.st_size:
        with _remembered_lock:
            _remembered[key] = facts
            while len(_remembered) > _REMEMBERED_FILES:
                _remembered.popitem(last=False)
    return facts


def _line_start(fd: int, facts: _Facts, line: int, bom: int) -> int:
    """The byte offset where ``line`` (1-based, at most total_lines) starts, scanning from the nearest known line."""
    with _remembered_lock:  # another thread's page may be adding a mark (two lists, one pair)
        known, pos = facts.nearest(line)
    if known == 1:
        pos = bom
    need = line - known  # newlines to pass
    while need:
        chunk = os.pread(fd, 2 * MARK_EVERY, pos)  # marks are this close: rarely more than one read
        if not chunk:
            break
        found = chunk.count(b"\n")
        if found < need:
            need -= found
            pos += len(chunk)
            continue
        j = -1
        for _ in range(need):
            j = chunk.find(b"\n", j + 1)
        pos += j + 1
        need = 0
    return pos


def _line_ends(buf: bytes, most: int | None) -> tuple[int, int]:
    """(end offset, count) of the first ``most`` complete lines of ``buf`` (all of them when None)."""
    total = buf.count(b"\n")
    if most is None or most >= total:
        return buf.rfind(b"\n") + 1, total
    j = -1
    for _ in range(most):
        j = buf.find(b"\n", j + 1)
    return j + 1, most


def _utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def read_page(
    fd: int,
    *,
    encoding: str,
    bom: int,
    offset: int,
    limit: int | None,
    max_bytes: int,
    st: os.stat_result | None = None,
) -> Page:
    """Read lines ``offset`` .. ``offset+limit-1`` (1-based) from ``fd`` within ``max_bytes`` of UTF-8.

    With ``st`` (the open file's stat), what the pass learns is remembered while the file stays unchanged.
    """
    if not _newline_is_byte(encoding):
        return _read_page_decoded(fd, encoding=encoding, bom=bom, offset=offset, limit=limit, max_bytes=max_bytes)
    facts = _facts_for(fd, st, encoding, bom)
    total = facts.total_lines
    content, taken, line_cut, truncated = "", 0, False, False
    if offset <= total:
        start = _line_start(fd, facts, offset, bom)
        # Every encoding here takes at least as many UTF-8 bytes as raw bytes: max_bytes raw cover the page.
        region = os.pread(fd, max_bytes, start)
        end, taken = _line_ends(region, limit)
        at_eof = start + len(region) >= facts.size
        if at_eof and end < len(region) and (limit is None or taken < limit):
            end, taken = len(region), taken + 1  # the last line, without a final newline
        content = region[:end].decode(encoding, "replace")
        if _utf8_size(content) > max_bytes:  # characters that grow in UTF-8: keep the lines that fit
            used, kept = 0, []
            *complete, rest = content.split("\n")
            for line in [f"{line}\n" for line in complete] + ([rest] if rest else []):
                used += _utf8_size(line)
                if used > max_bytes:
                    break
                kept.append(line)
            taken, content = len(kept), "".join(kept)
            end, _ = _line_ends(region, taken)
        if taken == 0 and region:  # one line longer than the cap: its head
            # Not final: a character cut at the region's end is left out, not replaced.
            first = codecs.getincrementaldecoder(encoding)("replace").decode(region.split(b"\n", 1)[0])
            content, taken, line_cut = _cut_utf8(first, max_bytes), 1, True
        elif offset + taken <= total:
            with _remembered_lock:
                facts.mark(offset + taken, start + end)  # the next page starts here
        truncated = line_cut or (offset + taken - 1 < total and (limit is None or taken < limit))
    end_line = offset + taken - 1
    return Page(
        content=content,
        total_lines=total,
        start_line=offset,
        end_line=end_line,
        next_offset=end_line + 1 if end_line < total else None,
        truncated=truncated,
        line_cut=line_cut,
        content_bytes=_utf8_size(content),
        sha256=facts.sha256,
        replaced="\ufffd" in content,
    )


def _read_page_decoded(fd: int, *, encoding: str, bom: int, offset: int, limit: int | None, max_bytes: int) -> Page:
    """read_page for encodings where a newline is not one byte (UTF-16, UTF-32): one decoding pass per page."""
    hasher = hashlib.sha256()
    decoder = codecs.getincrementaldecoder(encoding)("replace")
    byte_newlines = _newline_is_byte(encoding)
    parts: list[str] = []
    used = 0
    lineno = 1  # number of the line being assembled
    carry = ""
    collecting = True
    truncated = line_cut = False
    end_line = offset - 1
    replaced = False
    ends_newline = True
    pos = 0
    skip = bom

    def take(line: str, complete: bool) -> None:
        nonlocal used, collecting, truncated, line_cut, end_line
        if lineno < offset:
            return
        if limit is not None and lineno >= offset + limit:
            collecting = False
            return
        size = len(line.encode("utf-8", "surrogatepass"))
        if used + size > max_bytes:
            truncated = True
            collecting = False
            if not parts:  # one line longer than the cap: return its head
                parts.append(_cut_utf8(line, max_bytes))
                used = max_bytes
                line_cut = True
                end_line = lineno
            return
        parts.append(line)
        used += size
        end_line = lineno if complete or line else end_line

    while True:
        chunk = os.pread(fd, CHUNK, pos)
        if not chunk:
            break
        pos += len(chunk)
        hasher.update(chunk)
        if skip:
            chunk, skip = chunk[skip:], 0
        if not collecting and byte_newlines:
            lineno += chunk.count(b"\n")
            ends_newline = chunk.endswith(b"\n") if chunk else ends_newline
            continue
        text = decoder.decode(chunk)
        ends_newline = text.endswith("\n") if text else ends_newline
        replaced = replaced or "\ufffd" in text
        if len(carry) > max_bytes:  # one line longer than a page, kept whole (red team 125 F1: 525 MiB for a 512 MiB
            if lineno >= offset and (limit is None or lineno < offset + limit):  # line): its head is all a page takes
                take(carry, False)
            carry = ""
        if not collecting:
            lineno += text.count("\n")
            continue
        block = carry + text
        cut = block.rfind("\n") + 1
        block, carry = block[:cut], block[cut:]
        count = block.count("\n")
        if lineno + count <= offset:  # wholly before the page
            lineno += count
            continue
        if lineno >= offset and (limit is None or lineno + count <= offset + limit):
            size = len(block.encode("utf-8", "surrogatepass"))
            if used + size <= max_bytes:  # wholly inside the page: take the block at once
                parts.append(block)
                used += size
                lineno += count
                end_line = lineno - 1
                continue
        for line in block.split("\n")[:-1]:
            if collecting:
                take(line + "\n", True)
            lineno += 1
    tail = decoder.decode(b"", final=True)
    if collecting:
        carry += tail
        if carry:
            take(carry, False)
    ends_newline = ends_newline and not tail
    total = lineno - 1 + (0 if pos <= bom or ends_newline else 1)
    more_after = end_line < total
    return Page(
        content="".join(parts),
        total_lines=total,
        start_line=offset,
        end_line=end_line,
        next_offset=end_line + 1 if more_after else None,
        truncated=truncated,
        line_cut=line_cut,
        content_bytes=used,
        sha256=hasher.hexdigest(),
        replaced=replaced,
    )


def sha256_fd(fd: int) -> str:
    """SHA-256 of a whole open file, streamed."""
    hasher = hashlib.sha256()
    pos = 0
    while chunk := os.pread(fd, CHUNK, pos):
        hasher.update(chunk)
        pos += len(chunk)
    return hasher.hexdigest()


def sha256_at(dirfd: int, name: str) -> str:
    """SHA-256 of the regular file ``name`` in ``dirfd`` (no link followed, never blocking); "" when it cannot be
    opened."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dirfd)
    except OSError:
        return ""
    try:
        return sha256_fd(fd)
    finally:
        os.close(fd)
