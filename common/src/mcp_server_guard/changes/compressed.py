"""A file a command deleted whose bytes it kept beside it, compressed or decompressed: `gzip f` leaves `f.gz`,
`gunzip f.gz` leaves `f` (`xz`, `bzip2`, `lzma` alike, `x.tgz` and `x.tar`). The work is not lost, so deleting it is
not asked about as a loss (issue 45: questions only where the copy cannot help; undo gives both back exactly). Only
the very bytes count: the compressed file decompressed, whole, compared with the other as it is, never following a
link or opening anything but a regular file, within a bound of bytes decompressed per call (a bomb stops there and
is asked about as before).
"""

from __future__ import annotations

import os
import posixpath
import stat
import zlib
from collections.abc import Iterator, Mapping

from mcp_server_guard.changes.changeset import Change, ChangeSet
from mcp_server_guard.changes.git_index import open_below

__all__ = ["Decompressed", "kept_beside"]

# (suffix of the compressed name, what replaces it in the plain one, its format)
_NAMES = ((".gz", "", "gzip"), (".tgz", ".tar", "gzip"), (".bz2", "", "bzip2"), (".xz", "", "xz"),
          (".lzma", "", "xz"))  # fmt: skip
_CHUNK = 1 << 16  # compressed bytes fed, and bytes taken out, at a time
BOUND = 256 << 20  # bytes decompressed at most for one call


class Decompressed:
    """The bytes a call may still decompress to compare (``BOUND``), shared by its files."""

    def __init__(self, budget: int = BOUND) -> None:
        self.budget = budget


def kept_beside(changes: ChangeSet, change: Change, made: Mapping[str, Change], left: Decompressed) -> str | None:
    """The file the same change set made (``made``: path -> the creation) beside the file ``change`` deletes in
    which that file lives on, or None: its name with a compression suffix holding its bytes compressed, or (a
    compressed file deleted) its name without the suffix holding its bytes decompressed. Both are judged by their
    content (red team 107 F1: a job's look landed the deletion while the neighbour waited, then the job removed it)."""
    if change.action != "delete" or change.kind != "file":
        return None
    for suffix, plain, kind in _NAMES:
        packed = f"{change.path[: -len(plain)] if plain else change.path}{suffix}"
        if (not plain or change.path.endswith(plain)) and _made(made, packed):
            return packed if _same((changes.upper, packed), (changes.root, change.path), kind, left) else None
        if change.path.endswith(suffix) and _made(made, unpacked := change.path[: -len(suffix)] + plain):
            return unpacked if _same((changes.root, change.path), (changes.upper, unpacked), kind, left) else None
    return None


def _made(made: Mapping[str, Change], path: str) -> bool:
    found = made.get(path)
    return found is not None and found.action == "create" and found.kind == "file"


def _same(packed: tuple[str, str], plain: tuple[str, str], kind: str, left: Decompressed) -> bool:
    import lzma  # noqa: PLC0415 - only where a deletion has a compressed neighbour (not on a server's start)

    try:
        packed_fd = open_below(posixpath.join(*packed), packed[0])
    except OSError:
        return False
    try:
        plain_fd = open_below(posixpath.join(*plain), plain[0])
    except OSError:
        os.close(packed_fd)
        return False
    try:
        size = os.fstat(plain_fd).st_size
        if not (stat.S_ISREG(os.fstat(packed_fd).st_mode) and stat.S_ISREG(os.fstat(plain_fd).st_mode)):
            return False
        if size > left.budget:
            return False
        at = 0
        for out in _decompressed(packed_fd, kind):
            left.budget -= len(out)
            if at + len(out) > size or left.budget < 0 or os.pread(plain_fd, len(out), at) != out:
                return False
            at += len(out)
        return at == size
    except (OSError, ValueError, EOFError, lzma.LZMAError, zlib.error):
        return False
    finally:
        os.close(packed_fd)
        os.close(plain_fd)


def _decompressed(fd: int, kind: str) -> Iterator[bytes]:
    """The bytes of the one stream in ``fd``, at most ``_CHUNK`` at a time; ValueError where the stream is
    damaged, ends early, or has anything after its end (another member: compared as not the same, asked)."""
    if kind == "gzip":
        inflate = zlib.decompressobj(wbits=31)
        at = 0
        while chunk := os.pread(fd, _CHUNK, at):
            at += len(chunk)
            while not inflate.eof:  # (output still held inside comes out with no input: a chunk's worth each time)
                out = inflate.decompress(chunk, _CHUNK)
                yield out
                chunk = inflate.unconsumed_tail
                if not chunk and not out:
                    break
            if inflate.eof and (chunk or inflate.unused_data):
                raise ValueError("more after the stream")
        if not inflate.eof:
            raise ValueError("the stream ends early")
        return
    import bz2  # noqa: PLC0415 - as above
    import lzma  # noqa: PLC0415

    other = bz2.BZ2Decompressor() if kind == "bzip2" else lzma.LZMADecompressor()
    at = 0
    while chunk := os.pread(fd, _CHUNK, at):
        at += len(chunk)
        if other.eof:
            raise ValueError("more after the stream")
        yield other.decompress(chunk, _CHUNK)
        while not other.eof and not other.needs_input:
            yield other.decompress(b"", _CHUNK)
        if other.eof and other.unused_data:
            raise ValueError("more after the stream")
    if not other.eof:
        raise ValueError("the stream ends early")
