"""GNU make's expansion of a text, as ``make_reads`` needs it: variables (computed names too: ``$($(K)_CONF)``),
substitution references, and make's functions, innermost first, their arguments split where make splits them —
before they are expanded (``$(subst $(comma),.,$(FILES))``). And a make command line read as make reads it.

What cannot be known without running anything (``$(shell …)``, a variable nobody gives a value) is left as written:
``hook_runs`` takes a name with ``$`` left in it as a pattern, or names nothing where the whole name is unknown.
Where a choice depends on what only a run knows, the union is taken: ``$(if …)`` is both branches, ``$(firstword
…)`` every word — the judge names more files than make reads, never fewer. Bounded: depth and output.

Red team 131 F3: ``$(foreach …)``, ``$(call …)``, ``$(if …)``, ``comma := ,``, ``$($(K)_CONF)``.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping

from mcp_server_guard.patterns import deferred

__all__ = ["Expander", "MakeLine", "make_line", "percent_stem"]

_DEPTH = 12  # nested references followed at most
_STEPS = 20_000  # references one Expander expands at most (then left as written: the judge names less read)
_FOREACH_MAX = 256  # words one ``$(foreach …)`` goes over at most
_OUTPUT_MAX = 1 << 20  # characters one expansion gives at most (a value doubling itself 40 times: cut there)
_ARITY = {"patsubst": 3, "subst": 3, "addsuffix": 2, "addprefix": 2, "filter": 2, "filter-out": 2, "join": 2,
          "word": 2, "wordlist": 3, "foreach": 3, "if": 3, "call": 99, "or": 99, "and": 99}  # fmt: skip
_WORDS = ("sort", "strip", "firstword", "lastword", "words", "wildcard", "realpath", "abspath", "value", "flavor")
_PARTS = ("basename", "notdir", "dir", "suffix")
_KNOWN = frozenset({*_ARITY, *_WORDS, *_PARTS, "shell", "eval"})
_FUNCTION = deferred(r"([a-z][a-z-]*)[ \t]+(.*)\Z", re.S)
_SUBSTITUTION = deferred(r"([^:]*):([^=]*)=(.*)\Z", re.S)


def percent_stem(pattern: str, word: str) -> str | None:
    """What ``%`` stands for when ``word`` matches make's ``pattern`` (None: no match)."""
    head, percent, tail = pattern.partition("%")
    if not percent:
        return "" if word == pattern else None
    fits = len(word) >= len(head) + len(tail) and word.startswith(head) and word.endswith(tail)
    return word[len(head) : len(word) - len(tail)] if fits else None


def _closing(text: str, at: int) -> int:
    """The index of the bracket closing the one at ``at`` (make counts only its own kind), -1: none."""
    opening = text[at]
    closing = ")" if opening == "(" else "}"
    depth = 0
    for index in range(at, len(text)):
        if text[index] == opening:
            depth += 1
        elif text[index] == closing:
            depth -= 1
            if depth == 0:
                return index
    return -1


def _arguments(text: str, count: int) -> list[str]:
    """A function's arguments: split at commas outside any nested reference, into ``count`` at most."""
    parts: list[str] = []
    depth, start = 0, 0
    for index, char in enumerate(text):
        if char in "({":
            depth += 1
        elif char in ")}":
            depth -= 1
        elif char == "," and depth == 0 and len(parts) < count - 1:
            parts.append(text[start:index])
            start = index + 1
    return [*parts, text[start:]]


class Expander:
    """Expands texts with the values ``given`` (every value a name is given anywhere, joined: a superset)."""

    def __init__(self, given: Mapping[str, str], *, evals: bool = False) -> None:
        self.given = given
        self._values: dict[str, str] = {}
        self.evals = evals  # ``$(eval TEXT)`` gives TEXT expanded as lines of the makefile (else left as written)
        self._steps = _STEPS  # references expanded at most, all texts together (nested foreach: 256**k words)
        self.cut = False  # a bound was reached: something was left as written or cut (the reader fails closed)

    def text(self, text: str, local: Mapping[str, str] | None = None, depth: int = 0) -> str:
        """``text`` expanded; ``$$`` stays ``$$`` (the shell's, in a recipe)."""
        out: list[str] = []
        size, at = 0, 0
        while at < len(text) and size < _OUTPUT_MAX:
            dollar = text.find("$", at)
            if dollar < 0 or dollar + 1 >= len(text):
                out.append(text[at:])
                break
            out.append(text[at:dollar])
            after = text[dollar + 1]
            if after == "$":
                out.append("$$")
                at = dollar + 2
            elif after in "({":
                end = _closing(text, dollar + 1)
                if end < 0:
                    out.append(text[dollar:])
                    break
                out.append(self._reference(text[dollar + 2 : end], text[dollar : end + 1], local, depth))
                at = end + 1
            else:
                out.append(self._reference(after, text[dollar : dollar + 2], local, depth))
                at = dollar + 2
            size += len(out[-1])
        self.cut = self.cut or size >= _OUTPUT_MAX
        return "".join(out)[:_OUTPUT_MAX]

    def _reference(self, inner: str, written: str, local: Mapping[str, str] | None, depth: int) -> str:
        self._steps -= 1
        if depth >= _DEPTH or self._steps < 0:
            self.cut = True
            return written
        if (found := _FUNCTION.match(inner)) is not None and found.group(1) in _KNOWN:
            return self._function(found.group(1), found.group(2), written, local, depth)
        if (substituted := _SUBSTITUTION.match(inner)) is not None:
            name = self.text(substituted.group(1), local, depth + 1)
            words = self._variable(name, local, depth)
            old = self.text(substituted.group(2), local, depth + 1)
            new = self.text(substituted.group(3), local, depth + 1)
            if words is None:  # (no value known: any name with the new suffix, ``$(SRCS).d``)
                return f"$({name}){new.removeprefix('%')}"
            if "%" not in old:
                old, new = "%" + old, "%" + new
            return _patsubst(old, new, words)
        value = self._variable(self.text(inner, local, depth + 1), local, depth)
        return written if value is None else value

    def _variable(self, name: str, local: Mapping[str, str] | None, depth: int) -> str | None:
        if local is not None and name in local:
            return local[name]
        if name == "MAKE":
            return "make"
        if name not in self.given:
            return None
        if name not in self._values:
            self._values[name] = ""  # (a value naming itself stays empty)
            self._values[name] = self.text(self.given[name], None, depth + 1)
        return self._values[name]

    def _function(self, name: str, rest: str, written: str, local: Mapping[str, str] | None, depth: int) -> str:
        if name == "shell":
            return written  # (what a program prints: not known without running it)
        if name == "eval":  # (the text it makes is read as the makefile's own lines: red team 132)
            return "\n" + self.text(rest, local, depth + 1).replace("$$", "$") + "\n" if self.evals else written
        args = _arguments(rest, _ARITY.get(name, 1))
        if name == "foreach" and len(args) == 3:
            variable = self.text(args[0], local, depth + 1).strip()
            words = self.text(args[1], local, depth + 1).split()
            self.cut = self.cut or len(words) > _FOREACH_MAX
            out: list[str] = []
            size = 0
            for word in words[:_FOREACH_MAX]:  # (bounded as a whole: each word a step, the pieces' length summed)
                self._steps -= 1
                if self._steps < 0 or size > _OUTPUT_MAX:
                    self.cut = True
                    break
                out.append(self.text(args[2], {**(local or {}), variable: word}, depth + 1))
                size += len(out[-1]) + 1
            return " ".join(out)[:_OUTPUT_MAX]
        if name == "call":
            called = self.text(args[0], local, depth + 1).strip()
            numbered = {str(i): self.text(a, local, depth + 1) for i, a in enumerate(args[1:], 1)}
            body = self.given.get(called)
            return written if body is None else self.text(body, {**(local or {}), **numbered}, depth + 1)
        values = [self.text(a, local, depth + 1) for a in args]
        if name in ("if", "or", "and"):
            return " ".join(values[1:] if name == "if" else values)  # (every branch: a superset)
        return _text_function(name, values) if len(values) >= _ARITY.get(name, 1) else written


def _patsubst(pattern: str, replacement: str, words: str) -> str:
    stems = [(w, percent_stem(pattern.strip(), w)) for w in words.split()]
    return " ".join(w if stem is None else replacement.strip().replace("%", stem, 1) for w, stem in stems)


def _text_function(name: str, args: list[str]) -> str:
    """One of make's text functions on expanded arguments."""
    words = args[-1].split()
    if name == "subst":
        return args[2].replace(args[0], args[1]) if args[0] else args[2]
    if name == "patsubst":
        return _patsubst(args[0], args[1], args[2])
    if name in ("addsuffix", "addprefix"):
        return " ".join(w + args[0] if name == "addsuffix" else args[0] + w for w in words)
    if name in ("filter", "filter-out"):
        patterns = args[0].split()
        wanted = name == "filter"
        return " ".join(w for w in words if any(percent_stem(p, w) is not None for p in patterns) == wanted)
    if name == "join":
        return " ".join(a + b for a, b in itertools.zip_longest(args[0].split(), words, fillvalue=""))
    if name in _PARTS:
        return " ".join(filter(None, (_part(name, w) for w in words)))
    return " ".join(words)  # sort, strip, firstword, lastword, words, word, wordlist, wildcard (as a pattern)


def _part(name: str, word: str) -> str:
    """``$(basename …)``, ``$(notdir …)``, ``$(dir …)``, ``$(suffix …)`` of one word."""
    head, _, last = word.rpartition("/")
    _, dot, suffix = last.rpartition(".")
    if name == "notdir":
        return last
    if name == "dir":
        return f"{head}/" if "/" in word else "./"
    if name == "suffix":
        return f".{suffix}" if dot else ""
    return word[: len(word) - len(suffix) - 1] if dot else word


class MakeLine:
    """A make command line's words, read as make reads them."""

    def __init__(self) -> None:
        self.goals: list[str] = []
        self.variables: dict[str, str] = {}  # NAME=value words
        self.files: list[str] = []  # -f
        self.directory = ""  # -C (the last; relative ones joined)
        self.include_dirs: list[str] = []  # -I


_WITH_ARGUMENT = {"C": "directory", "f": "files", "I": "include_dirs", "o": "", "W": "", "l": "", "j": ""}
_LONG = {"--directory": "directory", "--file": "files", "--makefile": "files", "--include-dir": "include_dirs",
         "--old-file": "", "--assume-old": "", "--what-if": "", "--new-file": "", "--assume-new": "",
         "--load-average": "", "--jobs": ""}  # fmt: skip
_VARIABLE_WORD = deferred(r"^([A-Za-z_][\w.-]*)\s*(?:::?|\?|\+|!)?=(.*)\Z", re.S)


def make_line(words: list[str]) -> MakeLine:
    """The goals, variables, makefiles (``-f``, ``-sf X``, ``--file=X``), directory (``-C``, ``-sC dir``) and include
    directories (``-I``) of the words after ``make``. ``-j``/``-l`` take a number only when one follows."""
    line = MakeLine()

    def keep(where: str, value: str) -> None:
        if where == "directory":
            line.directory = value if value.startswith("/") or not line.directory else f"{line.directory}/{value}"
        elif where and value:
            getattr(line, where).append(value)

    at = 0
    while at < len(words):
        word, at = words[at], at + 1
        following = words[at] if at < len(words) else ""
        if word.startswith("--"):
            option, equals, value = word.partition("=")
            if option in _LONG and not equals:
                optional = option in ("--jobs", "--load-average")
                value, at = (following, at + 1) if not optional or following.isdigit() else ("", at)
            keep(_LONG.get(option, ""), value)
        elif word.startswith("-") and len(word) > 1:
            for index, flag in enumerate(word[1:], 1):
                if flag in _WITH_ARGUMENT:
                    value = word[index + 1 :]
                    if not value and (flag not in "jl" or following.isdigit()):
                        value, at = following, at + 1
                    keep(_WITH_ARGUMENT[flag], value)
                    break
        elif (found := _VARIABLE_WORD.match(word)) is not None:
            line.variables[found.group(1)] = found.group(2)
        else:
            line.goals.append(word)
    return line
