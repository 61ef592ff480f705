"""Protected-path patterns as regexes (``*`` within a component, ``**`` across them, matched as a whole path
suffix at any depth), and the matcher that asks many of them of many paths in time that does not grow with a
path's length times its depth (the judge asks it of every path a command changed, under the tree lock)."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable

__all__ = ["SuffixMatcher", "glob_regex", "hidden_named", "paths_regex"]


def glob_regex(pattern: str) -> str:
    """A protected-path pattern as a regex: ``*`` within a component, ``**`` across them (newlines in names
    included: ``.vscode/**`` covers a name with a newline in it), matched as a whole path suffix at any depth
    (``.git/config`` matches ``a/.git/config``)."""
    return r"(?:^|/)" + "".join(_glob_tokens(pattern)) + r"$"


_ACROSS = "(?s:.*)"  # ``**``


def paths_regex(paths: Iterable[str]) -> re.Pattern[str]:
    """Absolute paths (``*``, ``**`` and ``?`` as :func:`glob_regex` takes them) as one regex that matches, from
    the start of a path, each of them and what lies below it (the part matched: the entry's own path)."""
    bodies = ["".join(_glob_tokens(p)) for p in paths if p.startswith("/")]
    return re.compile("^/(?:" + "|".join(f"(?:{b})" for b in bodies) + ")(?=/|$)" if bodies else "(?!)")


def hidden_named(entries: Iterable[str], keep: Iterable[str]) -> re.Pattern[str]:
    """``paths_regex`` of the entries that hold none of ``keep`` (one of them matched, or below a match)."""
    kept = tuple(keep)
    return paths_regex(e for e in entries if not any(_holds(e, k) for k in kept))


def _holds(entry: str, path: str) -> bool:
    """Whether ``paths_regex([entry])`` matches ``path``; an entry without ``*`` or ``?`` is compared as a string
    (a regex compiled for each entry cost a first call ~10 ms), with the regex's own ends: the entry's path, what
    lies below it, or the path followed by one final newline (where ``$`` matches too)."""
    if not entry.startswith("/") or "*" in entry or "?" in entry:
        return paths_regex([entry]).match(path) is not None
    body = "/" + entry.strip("/")
    return (path.startswith(body) and path[len(body) :] in ("", "\n")) or path.startswith(body + "/")


def _glob_tokens(pattern: str) -> list[str]:
    """A pattern's regex, token by token (as :func:`glob_regex` spells it, without its anchors)."""
    out: list[str] = []
    i = 0
    p = pattern.strip("/")
    while i < len(p):
        if p.startswith("**", i):
            out.append(_ACROSS)
            i += 2
        elif p[i] == "*":
            out.append("[^/]*")
            i += 1
        elif p[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(p[i]))
            i += 1
    return out


def _alternation(bodies: list[str], end: str, flags: int) -> re.Pattern[str]:
    return re.compile("(?:^|/)(?:" + "|".join(f"(?:{b})" for b in bodies) + ")" + end if bodies else "(?!)", flags)


def _last(path: str, components: int) -> str:
    """The last ``components`` components of ``path`` (all of it when it has fewer), found from its end."""
    cut = len(path)
    for _ in range(components):
        cut = path.rfind("/", 0, cut)
        if cut < 0:
            return path
    return path[cut + 1 :]


class SuffixMatcher:
    """Whether a path matches any of many :func:`glob_regex` patterns — the same answer as ``re.search`` of their
    alternation, in time that does not grow with the path's length times its depth (threat: 150,000 paths, or
    paths thousands of bytes long and 120 levels deep, judged while the tree lock is held):

    * a pattern without ``**`` spans a fixed number of components: only the path's last that many are searched;
    * a pattern ``X/**`` (``X`` without ``**``) matches what lies below a directory ending in ``X``: a property of
      the path's directory, remembered per directory (each one's answer is its own or its parent's);
    * any other (``**`` elsewhere) is searched on the whole path."""

    _REMEMBERED = 100_000  # directories' answers kept at most (then forgotten, all at once)

    def __init__(self, patterns: Iterable[str], *, ignore_case: bool = True) -> None:
        # Compiled at the first search (issue 44: a server's start makes its Protection, and its first call may ask
        # nothing of it: ~10 ms of regex compiling off the first answer); the same regexes, the same answers.
        self._patterns = tuple(patterns)
        self._flags = re.IGNORECASE if ignore_case else 0
        self._lock = threading.Lock()
        self._built = False
        self._directories: dict[str, bool] = {}

    def _build(self) -> None:
        with self._lock:
            if self._built:
                return
            fixed: list[list[str]] = []
            below: list[list[str]] = []
            general: list[list[str]] = []
            for pattern in self._patterns:
                tokens = _glob_tokens(pattern)
                if _ACROSS not in tokens:
                    fixed.append(tokens)
                elif tokens[-2:] == ["/", _ACROSS] and _ACROSS not in tokens[:-2] and tokens[:-2]:
                    below.append(tokens[:-2])
                else:
                    general.append(tokens)

            def span(group: list[list[str]]) -> int:
                return max((t.count("/") + 1 for t in group), default=0)

            flags = self._flags
            self._fixed, self._fixed_span = _alternation(["".join(t) for t in fixed], "$", flags), span(fixed)
            self._below, self._below_span = _alternation(["".join(t) for t in below], r"\Z", flags), span(below)
            self._general = _alternation(["".join(t) for t in general], "$", flags) if general else None
            self._built = True

    def search(self, path: str) -> bool:
        if not self._built:
            self._build()
        if self._fixed_span and self._fixed.search(_last(path, self._fixed_span)):
            return True
        if self._general is not None and self._general.search(path):
            return True
        cut = path.rfind("/")
        return cut > 0 and self._below_directory(path[:cut])

    def _below_directory(self, directory: str) -> bool:
        """Whether ``directory`` or one of its ancestors ends in the ``X`` of a pattern ``X/**``."""
        if not self._below_span:
            return False
        known = self._directories
        if len(known) > self._REMEMBERED:
            known.clear()
        chain: list[str] = []
        found = False
        while directory:
            answer = known.get(directory)
            if answer is not None:
                found = answer
                break
            chain.append(directory)
            if self._below.search(_last(directory, self._below_span)):
                found = True
                break
            cut = directory.rfind("/")
            directory = directory[:cut] if cut > 0 else ""
        for seen in chain:
            known[seen] = found  # true for every one below a match, false for every one with none above
        return found
