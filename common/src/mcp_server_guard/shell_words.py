"""Bash's own expansions of a word whose parts a hook text gives (red team 170 F1, F3): a parameter's operators
(``${x%.disabled}``, ``${x/X/e}``, ``${x,,}``, ``${x:0:5}``), ``printf -v name FORMAT ARGS`` as an assignment, the
characters ``IFS`` splits at, and brace sequences (``check{1..3}``). The hook reader (``hook_words``) names the file
a word becomes, as bash makes it — never runs anything: each is done here on the text's static values."""

from __future__ import annotations

import fnmatch
import re
import shlex

__all__ = ["ifs_split", "operated", "printf_values", "sequence"]

_SEQUENCE = re.compile(r"\{(-?\d{1,6}|[A-Za-z])\.\.(-?\d{1,6}|[A-Za-z])(?:\.\.(-?\d{1,6}))?\}")
_PRINTF = re.compile(r"(?:^|[\s;&|(])printf\s+-v\s+([A-Za-z_]\w*)\s+([^\n;&|]+)")
_IFS = re.compile(r"(?:^|[\s;&|(])(?:export\s+|local\s+)?IFS=('[^'\n]*'|\"[^\"\n]*\"|[^\s;&|]*)")


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


def operated(value: str, operation: str) -> str | None:
    """``value`` as ``${name<operation>}`` makes it (bash's ``%``, ``%%``, ``#``, ``##``, ``/``, ``//``, ``/#``,
    ``/%``, ``,``, ``,,``, ``^``, ``^^``, ``:offset[:length]``, a default or an alternate: ``:-``, ``:+``); None
    for an operation not read here, or a value past 1,024 characters (its patterns are matched slice by slice)."""
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
    cuts = range(len(value) + 1)
    if how.startswith("%"):
        ends = [n for n in cuts if fnmatch.fnmatchcase(value[n:], pattern)]
        return value[: (min(ends) if how == "%%" else max(ends))] if ends else value
    starts = [n for n in cuts if fnmatch.fnmatchcase(value[:n], pattern)]
    return value[(max(starts) if how == "##" else min(starts)) :] if starts else value


def _replaced(value: str, how: str, pattern: str, by: str) -> str:
    """``value`` with the longest match of ``pattern`` replaced by ``by``: the first (``how`` ""), every (``/``), at
    its start (``#``) or at its end (``%``)."""
    if not pattern:
        return value
    if how == "#":
        ends = [n for n in range(len(value), -1, -1) if fnmatch.fnmatchcase(value[:n], pattern)]
        return by + value[ends[0] :] if ends else value
    if how == "%":
        starts = [n for n in range(len(value) + 1) if fnmatch.fnmatchcase(value[n:], pattern)]
        return value[: starts[0]] + by if starts else value
    out, at = [], 0
    while at < len(value):
        end = next((n for n in range(len(value), at, -1) if fnmatch.fnmatchcase(value[at:n], pattern)), None)
        if end is None:
            out.append(value[at])
            at += 1
            continue
        out.append(by)
        at = end
        if how != "/":
            return "".join(out) + value[at:]
    return "".join(out)


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
