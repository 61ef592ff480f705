"""Streaming text reads: one pass hashes the whole file, counts its lines, and keeps only the page.

Memory stays bounded by the page size plus one chunk, whatever the file's size.
"""

from __future__ import annotations

import codecs
import hashlib
import os
from dataclasses import dataclass

CHUNK = 1 << 20
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


def read_page(fd: int, *, encoding: str, bom: int, offset: int, limit: int | None, max_bytes: int) -> Page:
    """Read lines ``offset`` .. ``offset+limit-1`` (1-based) from ``fd`` within ``max_bytes`` of UTF-8."""
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
