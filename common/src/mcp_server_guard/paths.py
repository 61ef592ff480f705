"""Path containment, written once: is a path inside a directory, or inside any of several.

Whole components only (``/a/proj`` contains ``/a/proj/x`` but never ``/a/proj-evil``). These compare
strings: callers pass paths already made absolute and normalised (or real, for :func:`real_within_any`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["printable", "real_within_any", "state_dir", "within", "within_any"]


def state_dir() -> Path:
    """``$XDG_STATE_HOME/mcp-guard``: where the servers keep their state by default (see ``audit.state_dirs``)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "mcp-guard"


def within(child: str, parent: str) -> bool:
    """True when ``child`` is ``parent`` or lies below it, by whole path components."""
    if parent == "/":
        return child.startswith("/")
    parent = parent.rstrip("/")
    return child == parent or child.startswith(parent + "/")


def within_any(child: str, parents: Iterable[str]) -> bool:
    """True when ``child`` is inside one of ``parents`` (``within`` for each, written out: judging a change set
    asks this of every path several times)."""
    for parent in parents:
        if parent == "/":
            if child.startswith("/"):
                return True
            continue
        trimmed = parent.rstrip("/")
        if child.startswith(trimmed) and (len(child) == len(trimmed) or child[len(trimmed)] == "/"):
            return True
    return False


def real_within_any(path: str | os.PathLike[str], parents: Iterable[str]) -> bool:
    """Like :func:`within_any` for the real path of ``path`` (symlinks resolved, as far as it exists)."""
    return within_any(os.path.realpath(path), parents)


def printable(text: str) -> str:
    """A name as a person reads it and JSON carries it: a byte that was not UTF-8 (a surrogate escape) as
    ``\\xNN``, a control character (a newline, an ANSI escape) as its escape.

    Threat: a file name that fakes or buries text in the question a person answers ("…\\n\\nApply these
    changes? Only README.md is touched."), or that no encoder can send, stalling the question or the result."""
    if text.isprintable():
        return text
    out: list[str] = []
    for char in text:
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif char.isprintable():
            out.append(char)
        else:
            out.append(char.encode("unicode_escape").decode("ascii"))
    return "".join(out)
