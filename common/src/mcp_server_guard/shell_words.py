"""Bash's own expansions of a word whose parts a hook text gives (red team 170 F1, F3): a parameter's operators
(``${x%.disabled}``, ``${x/X/e}``, ``${x,,}``, ``${x:0:5}``), ``printf -v name FORMAT ARGS`` as an assignment, the
characters ``IFS`` splits at, and brace sequences (``check{1..3}``). The hook reader (``hook_words``) names the file
a word becomes, as bash makes it — never runs anything: each is done here on the text's static values."""

from __future__ import annotations

import fnmatch
import functools
import itertools
import re
import shlex

from mcp_server_guard.patterns import deferred

__all__ = ["array_values", "braced", "ifs_split", "inlined", "operated", "printf_values", "sequence"]

_BRACES = deferred(r"\{([^{}]*,[^{}]*)\}")
_SEQUENCE = deferred(r"\{(-?\d{1,6}|[A-Za-z])\.\.(-?\d{1,6}|[A-Za-z])(?:\.\.(-?\d{1,6}))?\}")
_PRINTF = deferred(r"(?:^|[\s;&|(])printf\s+-v\s+([A-Za-z_]\w*)\s+([^\n;&|]+)")
_IFS = deferred(r"(?:^|[\s;&|(])(?:export\s+|local\s+)?IFS=('[^'\n]*'|\"[^\"\n]*\"|[^\s;&|]*)")


def braced(word: str, limit: int = 64) -> list[str]:
    """``word`` with bash's brace expansion done (``a{b,c}d``: ``abd``, ``acd``), ``limit`` words at most."""
    if not word.startswith("$") and (items := sequence(word, limit)) is not None:  # (``check{1..3}``: rt170 F1)
        return [w for item in items for w in braced(item, limit)][:limit]
    found = _BRACES.search(word)
    if found is None or word.startswith("$"):
        return [word]
    head, tail = word[: found.start()], word[found.end() :]
    out: list[str] = []
    for part in found.group(1).split(","):
        out += braced(head + part + tail, limit - len(out))
        if len(out) >= limit:
            break
    return out[:limit]


def sequence(word: str, limit: int = 64) -> list[str] | None:
    """``word`` with its first brace sequence expanded (``check{1..3}``: ``check1``, ``check2``, ``check3``; letters
    and a step too), ``limit`` words at most; None when it has none."""
    found = _SEQUENCE.search(word)
    if found is None:
        return None
    first, last, step = found.group(1), found.group(2), abs(int(found.group(3) or 1)) or 1
    if first.lstrip("-").isdigit() != last.lstrip("-").isdigit():
        return None  # (``{1..a}``: bash leaves it as written)
    numbers = first.lstrip("-").isdigit()
    start, end = (int(first), int(last)) if numbers else (ord(first), ord(last))
    direction = 1 if end >= start else -1
    items = [str(n) if numbers else chr(n) for n in range(start, end + direction, step * direction)][:limit]
    return [word[: found.start()] + item + word[found.end() :] for item in items]


@functools.lru_cache(maxsize=4096)
def operated(value: str, operation: str) -> str | None:
    """``value`` as ``${name<operation>}`` makes it (bash's ``%``, ``%%``, ``#``, ``##``, ``/``, ``//``, ``/#``,
    ``/%``, ``,``, ``,,``, ``^``, ``^^``, ``:offset[:length]``, a default or an alternate: ``:-``, ``:+``); None
    for an operation not read here, or a value past 1,024 characters (a trim's pattern is matched slice by slice;
    a replacement's is one regex search: red team 172 E1)."""
    if len(value) > 1024:
        return None
    if operation in ("^^", ",,", "^", ","):
        upper = operation.startswith("^")
        if len(operation) == 2:
            return value.upper() if upper else value.lower()
        return (value[:1].upper() if upper else value[:1].lower()) + value[1:]
    if found := re.fullmatch(r"(%%|%|##|#)(.*)", operation, re.S):
        return _trimmed(value, found.group(1), _glob(found.group(2)))
    if found := re.fullmatch(r"/([/#%]?)((?:\\.|[^/])*)(?:/(.*))?", operation, re.S):
        return _replaced(value, found.group(1), _glob(found.group(2)), found.group(3) or "")
    if found := re.fullmatch(r":?([-=?+])(.*)", operation, re.S):  # (the value is set: its default is not taken)
        return found.group(2) if found.group(1) == "+" else value
    if found := re.fullmatch(r":(\d+|\s+-\d+)(?::\s*(-?\d+))?", operation):  # (``:-3`` is a default's)
        offset = int(found.group(1))
        start = max(len(value) + offset, 0) if offset < 0 else offset
        if found.group(2) is None:
            return value[start:]
        length = int(found.group(2))
        return value[start : start + length] if length >= 0 else value[start:length]
    return None


def _glob(pattern: str) -> str:
    """A pattern of bash's as ``fnmatch`` reads it: a character escaped with ``\\`` matches itself."""
    return re.sub(r"\\(.)", lambda found: f"[{found[1]}]" if found[1] in "*?[" else found[1], pattern)


def _trimmed(value: str, how: str, pattern: str) -> str:
    """``value`` with the shortest (``%``, ``#``) or longest (``%%``, ``##``) match of ``pattern`` cut from its end
    or its start."""
    whole = re.compile(fnmatch.translate(pattern))
    cuts = range(len(value) + 1)
    if how.startswith("%"):
        ends = (n for n in (cuts if how == "%%" else reversed(cuts)) if whole.fullmatch(value, n))
        return value[: next(ends, len(value))]
    starts = (n for n in (reversed(cuts) if how == "##" else cuts) if whole.fullmatch(value, 0, n))
    return value[next(starts, 0) :]


def _replaced(value: str, how: str, pattern: str, by: str) -> str:
    """``value`` with the longest match of ``pattern`` replaced by ``by``: the first (``how`` ""), every (``/``), at
    its start (``#``) or at its end (``%``) — one regex search each (a glob's stars taken greedily: the longest
    match at the leftmost start)."""
    if not pattern:
        return value
    found = re.compile(fnmatch.translate(pattern).removesuffix("\\Z"))
    if how == "#":
        match = found.match(value)
        return by + value[match.end() :] if match else value
    if how == "%":
        match = re.compile(found.pattern + r"\Z").search(value)
        return value[: match.start()] + by if match else value
    return found.sub(lambda _m: by.replace("\\", "\\\\"), value, count=0 if how == "/" else 1)


def printf_values(text: str) -> dict[str, str]:
    """``printf -v name FORMAT ARGS``: the value it gives ``name`` where the format's conversions are ``%s`` and
    ``%d`` and its arguments are plain words (``printf -v cmd '%s/%s' scripts lint-check``: red team 170 F3)."""
    found: dict[str, str] = {}
    for name, rest in _PRINTF.findall(text[: 256 << 10]):
        try:
            words = shlex.split(rest)
        except ValueError:
            continue
        if not words or any("$" in w or "`" in w for w in words):
            continue
        pieces = re.split(r"%[sd]", words[0].replace("%%", "\0"))
        given = [*words[1:], *[""] * len(pieces)]
        value = "".join(piece + (given[n] if n < len(pieces) - 1 else "") for n, piece in enumerate(pieces))
        if "%" not in value:
            found[name] = value.replace("\0", "%")
    return found


def ifs_split(text: str, values: list[str]) -> list[str]:
    """``values`` split as bash splits an unquoted expansion of them where ``text`` sets ``IFS`` (``IFS=,;
    $cmd``: red team 170 F3): each with those characters made blanks; none where the text does not set it."""
    given = "".join(v.strip("'\"") for v in _IFS.findall(text[: 256 << 10]))
    chars = "".join(dict.fromkeys(c for c in given if not c.isspace()))
    if not chars:
        return []
    table = str.maketrans(chars, " " * len(chars))
    return [v.translate(table) for v in values if any(c in v for c in chars)]


_SET_ARGS = deferred(r"(?:^|[\s;&|(])set\s+(?:--\s+)?([^\n;&|#-][^\n;&|#]*)")
# (blanks taken possessively: two ``\s*`` around an optional ``()`` split a long run of blanks every way)
_FUNCTION = deferred(r"(?:^|[\s;&|(])(?:function\s++)?([A-Za-z_][\w-]*+)\s*+(?:\(\s*+\))?\s*+\{")
_POSITIONAL = deferred(r"\$\{?([1-9@*])\}?")
_ARRAY_GIVEN = deferred(r"(?:^|[\s;&|(])(?:local\s+|declare\s+-a\s+)?([A-Za-z_]\w*)=\(([^()]*)\)")


def _words(text: str) -> list[str] | None:
    try:
        words = shlex.split(text, comments=True)
    except ValueError:
        return None
    return words if not any("$" in w or "`" in w for w in words) else None


def _given(text: str, arguments: list[str]) -> str:
    """``text`` with its positional parameters (``$1``, ``${2}``, ``"$@"``) as ``arguments`` give them."""

    def one(found: re.Match[str]) -> str:
        which = found.group(1)
        if which in "@*":
            return shlex.join(arguments)
        return arguments[int(which) - 1] if int(which) <= len(arguments) else ""

    return _POSITIONAL.sub(one, text)


def inlined(text: str) -> list[str]:
    """The texts a hook's positional parameters make (red team 172 F1): what follows ``set -- a b`` with ``$1``,
    ``$2`` given, and each function's body as each call of it gives its arguments (``run() { "$1/$2"; }; run
    scripts lint-check``) — 32 at most, each call's arguments plain words."""
    text = text[: 256 << 10]
    out: list[str] = []
    for found in _SET_ARGS.finditer(text):
        if (arguments := _words(found.group(1))) is not None:
            out.append(_given(text[found.end() :], arguments))
    for found in itertools.islice(_FUNCTION.finditer(text), 32):
        body, depth, end = found.end(), 1, found.end()
        while depth and end < min(len(text), body + 16384):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            end += 1
        calls = re.finditer(rf"(?:^|[\s;&|(]){re.escape(found.group(1))}[ \t]+([^\n;&|#)]+)", text[end:])
        for call in itertools.islice(calls, 16):
            if (arguments := _words(call.group(1))) is not None:
                out.append(_given(text[body : end - 1], arguments))
    return out[:32]


def array_values(text: str) -> dict[str, str]:
    """An array's elements as the text gives them (``parts=(scripts lint-check)``: ``parts[0]``, ``parts[1]``, and
    ``parts[@]`` all of them: red team 172 F1), plain words only."""
    found: dict[str, str] = {}
    for name, items in _ARRAY_GIVEN.findall(text[: 256 << 10]):
        if (words := _words(items)) is not None:
            found |= {f"{name}[{n}]": word for n, word in enumerate(words[:64])}
            found[f"{name}[@]"] = found[f"{name}[*]"] = " ".join(words[:64])
    return found
