"""Content sniffing with libmagic: is this text we may hand to a model, and in which encoding?"""

from __future__ import annotations

import codecs
import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # Lazy for start-up time: libmagic and its database load on the first sniff, not at import.
    import magic

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# libmagic charset names that are not Python codec names.
_CHARSET_ALIASES = {"us-ascii": "ascii", "unknown-8bit": "", "binary": "", "ebcdic": "cp500"}


@functools.cache
def _magic(kind: str) -> magic.Magic:
    """One libmagic cookie per kind, loaded on first use (the database costs milliseconds).

    ``mime``: every test; ``builtin``: only libmagic's compiled-in tests (JSON, CSV, text encodings),
    two orders of magnitude faster on text; ``encoding``: the charset.
    """
    # Lazy for start-up time: libmagic and its database load on the first sniff, not at import.
    import magic  # noqa: PLC0415

    cookie = magic.Magic(mime=kind != "encoding", mime_encoding=kind == "encoding")
    if kind == "builtin":
        magic.magic_setflags(cookie.cookie, cookie.flags | magic.MAGIC_NO_CHECK_SOFT)
    return cookie


def mime_of(data: bytes, *, full: bool = True) -> str:
    """libmagic's MIME type for ``data``; ``full=False`` skips the (slow) pattern database."""
    return _magic("mime" if full else "builtin").from_buffer(data) if data else "application/x-empty"


@dataclass(frozen=True)
class Sniffed:
    mime: str
    encoding: str  # a Python codec name; "latin-1" as a last resort when not text
    bom: int  # length of the byte-order mark to skip
    is_text: bool


def _valid_utf8_prefix(head: bytes, complete: bool) -> bool:
    """UTF-8 that may end mid-character (a sniffed head cuts files anywhere)."""
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    try:
        decoder.decode(head, final=complete)
    except UnicodeDecodeError:
        return False
    return True


def sniff(head: bytes, *, complete: bool) -> Sniffed:
    """Classify the first bytes of a file; ``complete`` when ``head`` is the whole file."""
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return Sniffed(mime_of(head), encoding, len(bom), True)
    if b"\x00" not in head and _valid_utf8_prefix(head, complete):
        # UTF-8 without NUL bytes is text whatever libmagic's guess (it calls some source files data);
        # its MIME type comes from the compiled-in tests only, which keeps a read of a small file cheap.
        return Sniffed(mime_of(head, full=False), "utf-8", 0, True)
    charset = ""
    if b"\x00" not in head:
        found = (_magic("encoding").from_buffer(head) or "").lower()
        charset = _CHARSET_ALIASES.get(found, found)
        try:
            charset = codecs.lookup(charset).name if charset else ""
        except LookupError:
            charset = ""
    return Sniffed(mime_of(head), charset or "latin-1", 0, False)
