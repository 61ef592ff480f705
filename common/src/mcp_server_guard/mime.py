"""Content sniffing with libmagic: is this text we may hand to a model, and in which encoding?"""

from __future__ import annotations

import codecs
import functools
from dataclasses import dataclass

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
    # Loading the magic database costs milliseconds: once per process, on first use.
    return magic.Magic(mime=kind == "mime", mime_encoding=kind == "encoding")


@dataclass(frozen=True)
class Sniffed:
    mime: str
    encoding: str  # a Python codec name; "" when the bytes are not text
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
    mime = _magic("mime").from_buffer(head) if head else "application/x-empty"
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return Sniffed(mime, encoding, len(bom), True)
    if b"\x00" not in head and _valid_utf8_prefix(head, complete):
        # UTF-8 without NUL bytes is text whatever libmagic's guess (it calls some source files data).
        return Sniffed(mime, "utf-8", 0, True)
    charset = ""
    if b"\x00" not in head:
        found = (_magic("encoding").from_buffer(head) or "").lower()
        charset = _CHARSET_ALIASES.get(found, found)
        try:
            charset = codecs.lookup(charset).name if charset else ""
        except LookupError:
            charset = ""
    return Sniffed(mime, charset or "latin-1", 0, False)
