"""One shell word's static value, as bash would resolve it when that is static, or unknown when it is not.

Quotes removed, ``\\`` escapes and ``$'…'`` decoded, ``"…"`` expanded where every reference in it is a variable the
line itself fixes (``Known``: ``F=-rf; rm $F ~`` is ``rm -rf ~``), and brace expansion (``rm {-rf,x}``); anything
else that expands (``$x`` unknown, ``$(…)``, a glob) leaves the word unknown. Which nodes are words, and what
the line fixes, is the walker's (``walker``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mcp_server_guard.patterns import deferred
from mcp_server_guard.shell.strings.commands import Word

if TYPE_CHECKING:
    from tree_sitter import Node

_GLOB_CHARS = frozenset("*?[")
_BRACE = deferred(r"\{[^{}]*(,|\.\.)[^{}]*\}")
_ANSI_SIMPLE = {
    "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
    "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?",
}  # fmt: skip
# $NAME, ${NAME} and the special parameters: the references whose value a line can fix.
_PLAIN_REF = deferred(r"\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\}|([$!?#]))")
# Parameters that always hold a number (a pid, a status, a count): never an option, never -1.
_NUMERIC = frozenset({"$", "!", "?", "#", "PPID", "BASHPID", "RANDOM", "SRANDOM", "SECONDS", "LINENO", "UID", "EUID"})


INDIRECT = "\x00indirect"  # a source of a copy: the value of whatever a name (``${!ref}``) names


@dataclass
class Known:
    """What the line itself says about its variables: every value assigned, and which are only ever integers."""

    assigned: dict[str, list[Word | None]] = field(default_factory=dict)  # None: set at run time (read …)
    integers: set[str] = field(default_factory=set)  # assigned by arithmetic (i=0, i++)
    declared_integers: set[str] = field(default_factory=set)  # declare -i: every assignment is evaluated
    # Names whose value may be text the line read (read/mapfile, $(…), a copy of such a name, what bash fills in
    # from them): only these make an evaluation of a value run what the stdin holds.
    from_input: set[str] = field(default_factory=set)
    copies: list[tuple[str, frozenset[str]]] = field(default_factory=list)  # NAME=…$x…: NAME holds x's text
    substitutes: bool = False  # the line has a $(…): what it prints can reach $1, $@, $_, BASH_REMATCH …

    def value(self, name: str) -> str | None:
        """The value a reference to ``name`` has, when the line fixes it (a single static assignment)."""
        if name in _NUMERIC:
            return "$" + name  # a number: shown as written
        values = self.assigned.get(name)
        if not values:
            return {"HOME": "~", "PWD": "."}.get(name)
        if len(values) == 1 and values[0] is not None and values[0].static is not None:
            return values[0].static
        return None

    def settle_inputs(self) -> None:
        """Close ``from_input`` over copies (`m=$n`, `for i in $n`, `printf -v m %s "$n"`)."""
        if self.from_input:
            self.from_input.add(INDIRECT)  # `ref=n; m=${!ref}`: whatever ref names may be input
        # Threat (time): a chain of 10,000 copies written backwards; each name is visited once (not a pass each).
        copied_into: dict[str, list[str]] = {}
        for name, sources in self.copies:
            for source in sources:
                copied_into.setdefault(source, []).append(name)
        waiting = list(self.from_input)
        while waiting:
            for name in copied_into.get(waiting.pop(), []):
                if name not in self.from_input:
                    self.from_input.add(name)
                    waiting.append(name)

    def code_in(self, name: str) -> bool | None:
        """Could evaluating ``name``'s value as arithmetic run code? None: the line never sets it."""
        values = self.assigned.get(name)
        if not values:
            return None if name not in self.integers and name not in _NUMERIC else False
        return any(word is None or word.value is None or re.search(r"[$`]", word.value) for word in values)


def text_of(node: Node) -> str:
    """The source text of a syntax node (bytes bash would not decode kept as surrogates)."""
    return (node.text or b"").decode("utf-8", "surrogateescape")


def decode_ansi_c(body: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\" or i + 1 >= len(body):
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ANSI_SIMPLE:
            out.append(_ANSI_SIMPLE[nxt])
            i += 2
        elif nxt == "x":
            digits = re.match(r"[0-9a-fA-F]{1,2}", body[i + 2 :])
            if digits:
                out.append(chr(int(digits.group(), 16)))
                i += 2 + len(digits.group())
            else:
                out.append("\\x")
                i += 2
        elif nxt in "uU":
            digits = re.match(r"[0-9a-fA-F]{1,4}" if nxt == "u" else r"[0-9a-fA-F]{1,8}", body[i + 2 :])
            if digits:
                out.append(chr(min(int(digits.group(), 16), 0x10FFFF)))
                i += 2 + len(digits.group())
            else:
                out.append("\\" + nxt)
                i += 2
        elif nxt in "01234567":
            digits = re.match(r"[0-7]{1,3}", body[i + 1 :])
            assert digits is not None
            out.append(chr(int(digits.group(), 8) & 0xFF))
            i += 1 + len(digits.group())
        elif nxt == "c" and i + 2 < len(body):
            out.append(chr(ord(body[i + 2]) & 0x1F))
            i += 3
        else:
            out.append("\\" + nxt)
            i += 2
    return "".join(out)


def _unquoted(text: str) -> tuple[str, bool]:
    """Remove backslash escapes from an unquoted word; report unescaped glob characters."""
    out: list[str] = []
    glob = False
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            if text[i + 1] != "\n":  # backslash-newline is a line continuation
                out.append(text[i + 1])
            i += 2
            continue
        if ch in _GLOB_CHARS:
            glob = True
        out.append(ch)
        i += 1
    joined = "".join(out)
    return joined, glob or bool(_BRACE.search(text))


def _double_quoted(inner: str, known: Known | None = None) -> str | None:
    """The value of a "…" string's inside, by bash's rules; None when it expands anything not known.

    Computed from the source text, not from tree nodes, so no token (a lone ``$``) is ever dropped.
    """
    out: list[str] = []
    i = 0
    while i < len(inner):
        ch = inner[i]
        nxt = inner[i + 1] if i + 1 < len(inner) else ""
        if ch == "\\" and nxt in ("$", "`", '"', "\\", "\n"):
            if nxt != "\n":
                out.append(nxt)
            i += 2
            continue
        if ch == "$" and known is not None:
            ref = _PLAIN_REF.match(inner, i)
            if ref is not None:
                value = known.value(ref.group(1) or ref.group(2) or ref.group(3))
                if value is None:
                    return None
                out.append(value)
                i = ref.end()
                continue
        if ch == "`" or (ch == "$" and nxt and (nxt.isalnum() or nxt in "_{(@*#?$!-")):
            return None
        out.append(ch)
        i += 1
    return "".join(out)


def _is_prompt_expansion(node: Node) -> bool:
    return node.type == "expansion" and bool(re.search(r"@[PpEAKaQUuLk]?\}$", text_of(node))) and "@P" in text_of(node)


def resolve_word(node: Node, known: Known | None = None) -> Word:
    """The static value of one argument node, as bash would produce it (or unknown).

    ``known`` holds the variables whose value the line itself fixes (``F=-rf; rm $F ~`` is ``rm -rf ~``)."""
    raw = text_of(node)
    kind = node.type
    if kind in ("simple_expansion", "expansion") and known is not None:
        ref = _PLAIN_REF.fullmatch(raw)
        value = known.value(ref.group(1) or ref.group(2) or ref.group(3)) if ref is not None else None
        if value is not None:
            return Word(value, raw, split=True)
    if kind == "variable_name":
        return Word(raw, raw)
    if kind in ("word", "number", "file_descriptor"):
        value, glob = _unquoted(raw)
        return Word(value, raw, glob=glob)
    if kind == "raw_string":
        return Word(raw[1:-1], raw)
    if kind == "ansi_c_string":
        return Word(decode_ansi_c(raw[2:-1]), raw)
    if kind in ("string", "translated_string"):
        inner = raw[2:-1] if raw.startswith('$"') else raw[1:-1]
        return Word(_double_quoted(inner, known), raw, prompt_expansion="@P}" in raw)
    if kind == "concatenation":
        parts: list[str] = []
        glob = prompt = False
        static = True
        for child in node.children:
            if not child.is_named:  # a bare token inside a word (e.g. a lone "$") is literal text
                parts.append(text_of(child))
                continue
            word = resolve_word(child, known)
            glob = glob or word.glob
            prompt = prompt or word.prompt_expansion
            if word.value is None:
                static = False
            else:
                parts.append(word.value)
        if _BRACE.search(raw) and not raw.startswith(("'", '"')):
            glob = True
        return Word("".join(parts) if static else None, raw, glob=glob, prompt_expansion=prompt)
    return Word(None, raw, prompt_expansion=_is_prompt_expansion(node))


def expand_braces(text: str, limit: int = 256) -> list[str]:
    """Bash brace expansion of one word (``{a,b}``, ``{1..3}``, ``{a..c}``, nested), capped at ``limit``."""
    start = text.find("{")
    if start < 0:
        return [text]
    depth = 0
    parts: list[str] = []
    last = start + 1
    for i in range(start, len(text)):
        ch = text[i]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                parts.append(text[last:i])
                prefix, suffix = text[:start], text[i + 1 :]
                if len(parts) == 1:
                    alternatives = _sequence(parts[0])
                    if alternatives is None:  # "{x}": not an expansion; look further right
                        return [prefix + "{" + parts[0] + "}" + rest for rest in expand_braces(suffix, limit)]
                else:
                    alternatives = [alt for part in parts for alt in expand_braces(part, limit)]
                out: list[str] = []
                for alt in alternatives:
                    for rest in expand_braces(suffix, limit):
                        out.append(prefix + alt + rest)
                        if len(out) >= limit:
                            return out
                return out
        elif ch == "," and depth == 1:
            parts.append(text[last:i])
            last = i + 1
    return [text]


def _sequence(body: str) -> list[str] | None:
    found = re.fullmatch(r"(-?\d+)\.\.(-?\d+)|([a-zA-Z])\.\.([a-zA-Z])", body)
    if not found:
        return None
    if found.group(1) is not None:
        a, b = int(found.group(1)), int(found.group(2))
        step = 1 if b >= a else -1
        return [str(n) for n in range(a, b + step, step)][:256]
    a, b = ord(found.group(3)), ord(found.group(4))
    step = 1 if b >= a else -1
    return [chr(n) for n in range(a, b + step, step)]
