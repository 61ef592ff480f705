"""Shell command lines, parsed with tree-sitter-bash into the facts a policy decides on.

Every simple command in the line is found — in pipelines, lists, subshells, ``{ }``, ``$(…)``,
backticks, process substitution, function bodies, ``if``/``for``/``while``/``case`` — with its words
resolved the way bash would resolve them when that is static (quotes removed, ``\\`` escapes and
``$'…'`` decoded) and marked unknown when it is not (expansions, substitutions, globs). What cannot be
decided statically is reported as a finding, never silently dropped.

This is analysis for a policy that *advises*; the kernel sandbox is the boundary.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

# What one command line may cost to analyse (beyond these the line is refused, not judged): its size, its
# syntax tree's size and depth (the walker recurses per level), and the simple commands it holds.
MAX_COMMAND_BYTES = 256 * 1024
MAX_SYNTAX_NODES = 20_000
MAX_SYNTAX_DEPTH = 256
MAX_COMMANDS = 1000

_GLOB_CHARS = frozenset("*?[")
_BRACE = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")
_ANSI_SIMPLE = {
    "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
    "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?",
}  # fmt: skip
_WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_SIMPLE_BODIES = frozenset({"command", "pipeline", "list", "negated_command", "declaration_command", "unset_command"})
_DYNAMIC_NODES = frozenset(
    {"simple_expansion", "expansion", "command_substitution", "process_substitution", "arithmetic_expansion"}
)


# $NAME, ${NAME} and the special parameters: the references whose value a line can fix.
_PLAIN_REF = re.compile(r"\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\}|([$!?#]))")
# Parameters that always hold a number (a pid, a status, a count): never an option, never -1.
_NUMERIC = frozenset({"$", "!", "?", "#", "PPID", "BASHPID", "RANDOM", "SRANDOM", "SECONDS", "LINENO", "UID", "EUID"})
_ARITH_TEST_OPS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_ARITH_ASSIGN = frozenset({"=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^=", "++", "--"})
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Threat: a name with a subscript that runs code (`printf -v 'a[$(rm -rf v)]' x`): bash evaluates the
# subscript of a name it is given as arithmetic, and arithmetic expands $(…) and `…`.
_CODE_SUBSCRIPT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\[[^\]]*[$`]")
# Builtins that take variable names (and evaluate their subscripts).
_NAME_TAKERS = frozenset(
    {"printf", "read", "unset", "declare", "typeset", "local", "readonly", "export", "mapfile", "readarray",
     "getopts", "test", "[", "let", "wait"}
)  # fmt: skip


class TooComplex(ValueError):
    """The line is too big or too deeply nested to be analysed within the bounds above."""


@dataclass(frozen=True)
class Word:
    """One shell word: its static value, or ``None`` when only run time can tell."""

    value: str | None
    raw: str
    glob: bool = False  # unquoted glob or brace expansion: the word may become several
    prompt_expansion: bool = False  # ${var@P}: the value is itself expanded like a prompt
    split: bool = False  # an unquoted variable whose known value bash splits into several words
    filled: bool = False  # part of it is filled in at run time by a wrapper (xargs -I{} sh -c 'x {}')

    @property
    def static(self) -> str | None:
        return None if self.glob else self.value


@dataclass
class Command:
    """A simple command: argv words (assignments removed), where it sits, and what feeds its stdin."""

    words: list[Word]
    text: str
    piped: bool = False  # reads a pipe from a previous command
    stdin_text: str | None = None  # a here-doc or here-string body, when static
    stdin_dynamic: bool = False  # a here-doc/here-string whose body has expansions
    stdin_file: bool = False  # `< file`: stdin is a file's content
    upstream: Command | None = None  # the command before it in a pipeline (what it reads)
    assignments: list[tuple[str, Word]] = field(default_factory=list)  # NAME=value words before the program


@dataclass(frozen=True)
class Redirect:
    op: str
    target: Word
    fd: str | None

    @property
    def writes(self) -> bool:
        return self.op in _WRITE_OPS


@dataclass(frozen=True)
class Finding:
    """Something about the line as a whole that the policy must weigh (e.g. ``fork-bomb``)."""

    kind: str
    detail: str


@dataclass
class Parsed:
    source: str
    commands: list[Command] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    # Variables that bash evaluates as arithmetic (or as a variable's name) but the line never sets: their
    # value comes from the environment, which the engine checks.
    evaluated_from_env: set[str] = field(default_factory=set)
    evaluated_code: list[str] = field(default_factory=list)  # static values bash will evaluate (their $(…) runs)
    # Threat: `read n; echo $((n))`, `(( $(cat) ))`, `let "$(cat)"`, `declare -i n; read n`, `printf -v "$l" x`,
    # `[[ -v $l ]]`: bash evaluates, as arithmetic or as a name, a value only run time knows, and arithmetic runs
    # the $(…) of an array subscript in it (`a[$(shutdown -h now)]`). When that value is what the line reads from
    # its stdin, the engine judges the stdin as command lines (like `eval "$(cat)"`).
    evaluates_run_time: bool = False


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
            self.from_input.add(_INDIRECT)  # `ref=n; m=${!ref}`: whatever ref names may be input
        grown = True
        while grown:
            grown = False
            for name, sources in self.copies:
                if name not in self.from_input and sources & self.from_input:
                    self.from_input.add(name)
                    grown = True

    def code_in(self, name: str) -> bool | None:
        """Could evaluating ``name``'s value as arithmetic run code? None: the line never sets it."""
        values = self.assigned.get(name)
        if not values:
            return None if name not in self.integers and name not in _NUMERIC else False
        return any(word is None or word.value is None or re.search(r"[$`]", word.value) for word in values)


@functools.cache
def _parser() -> Parser:
    # Loaded on first use: the file servers share this library and never parse shell.
    import tree_sitter_bash  # noqa: PLC0415
    from tree_sitter import Language, Parser  # noqa: PLC0415

    return Parser(Language(tree_sitter_bash.language()))


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "surrogateescape")


def _decode_ansi_c(body: str) -> str:
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
    return node.type == "expansion" and bool(re.search(r"@[PpEAKaQUuLk]?\}$", _text(node))) and "@P" in _text(node)


def resolve_word(node: Node, known: Known | None = None) -> Word:
    """The static value of one argument node, as bash would produce it (or unknown).

    ``known`` holds the variables whose value the line itself fixes (``F=-rf; rm $F ~`` is ``rm -rf ~``)."""
    raw = _text(node)
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
        return Word(_decode_ansi_c(raw[2:-1]), raw)
    if kind in ("string", "translated_string"):
        inner = raw[2:-1] if raw.startswith('$"') else raw[1:-1]
        return Word(_double_quoted(inner, known), raw, prompt_expansion="@P}" in raw)
    if kind == "concatenation":
        parts: list[str] = []
        glob = prompt = False
        static = True
        for child in node.children:
            if not child.is_named:  # a bare token inside a word (e.g. a lone "$") is literal text
                parts.append(_text(child))
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


def _has_dynamic(node: Node) -> bool:
    if node.type in _DYNAMIC_NODES:
        return True
    return any(_has_dynamic(child) for child in node.named_children)


def _collect(root: Node) -> Known:
    """Every assignment in the line (standalone, ``declare``, ``for``, arithmetic, ``read`` and friends)."""
    known = Known()

    def add(name: str, word: Word | None) -> None:
        known.assigned.setdefault(name.partition("[")[0], []).append(word)

    for node in _descendants(root):
        kind = node.type
        known.substitutes = known.substitutes or kind == "command_substitution"
        if kind == "variable_assignment" and node.parent is not None:
            name, word = _assignment(node)
            if node.parent.type == "c_style_for_statement":
                known.integers.add(name)
            elif node.parent.type != "command":  # `X=1 cmd` sets X for cmd only, not for the line
                add(name, None if "+=" in _text(node)[: len(name) + 2] else word)
            _note_input(known, name.partition("[")[0], node.named_children[1:])
        elif kind == "for_statement":
            variable = node.child_by_field_name("variable")
            values = node.children_by_field_name("value")
            if variable is not None:
                if not values:  # `for x; do` iterates over "$@"
                    add(_text(variable), None)
                for value in values:
                    add(_text(variable), resolve_word(value))
                _note_input(known, _text(variable), values)
        elif kind in ("binary_expression", "postfix_expression", "unary_expression") and _in_arithmetic(node):
            operators = {_text(c) for c in node.children if not c.is_named}
            target = next((c for c in node.named_children if c.type == "variable_name"), None)
            if target is not None and operators & _ARITH_ASSIGN:
                known.integers.add(_text(target))
        elif kind == "declaration_command":
            flags = [_text(c) for c in node.named_children if c.type == "word" and _text(c).startswith("-")]
            if any("i" in flag[1:] for flag in flags):
                for child in node.named_children:
                    target = child.child_by_field_name("name") if child.type == "variable_assignment" else child
                    if target is not None and target.type == "variable_name":
                        known.declared_integers.add(_text(target))
        elif kind == "command":
            name_node = node.child_by_field_name("name")
            program = _text(name_node) if name_node is not None else ""
            if program in ("read", "mapfile", "readarray", "getopts", "printf"):
                arguments = node.children_by_field_name("argument")
                words = [_text(w) for w in arguments]
                names = _names_set_by(program, words)
                for name in names:
                    add(name, None)
                if program in ("read", "mapfile", "readarray"):
                    # what they read; with no name, into REPLY / MAPFILE
                    known.from_input.update(names or ["REPLY" if program == "read" else "MAPFILE"])
                elif names:  # printf -v NAME FORMAT ARGS, getopts: a copy of what the arguments hold
                    _note_input(known, names[0], list(arguments))
    known.settle_inputs()
    return known


# Variables bash fills in from other values (a match, an option's value, the last argument, the arguments): they
# hold input when the line reads any.
_INDIRECT = "\x00indirect"
_SUBSCRIPTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\[(.*)\]\+?=?", re.DOTALL)
_OFFSET = re.compile(r"\$\{[A-Za-z_0-9@*]+(?:\[[^\]]*\])?:(?![-=?+])(.*)\}$", re.DOTALL)
_FILLED = frozenset({"BASH_REMATCH", "OPTARG", "_", "@", "*", "1", "2", "3", "4", "5", "6", "7", "8", "9"})


def _note_input(known: Known, name: str, values: Sequence[Node]) -> None:
    """``name`` is given ``values``: input when they hold a substitution (`x=$(cat)`), a copy of names that
    hold input (``$n``, ``${n:1}``; not ``${#n}``, ``${!a[@]}``, ``$((…))``, which are numbers), ``${!ref}``."""
    sources: set[str] = set()
    for value in values:
        if value.type == "word" and _IDENT.fullmatch(_text(value)):
            sources.add(_text(value))  # `y=x; $((y))`: arithmetic evaluates the name y holds
        for node in [value, *_descendants(value)]:
            if node.type in ("command_substitution", "process_substitution"):
                known.from_input.add(name)
                return
            if node.type == "expansion" and _text(node).startswith(("${#", "${!")):
                text = _text(node)
                if text.startswith("${!") and not text.endswith(("[@]}", "[*]}")):
                    sources.add(_INDIRECT)  # ${!ref}: the value of whatever ref names
                continue
            if node.type == "variable_name" and _counts_as_text(node):
                sources.add(_text(node))
    if sources:
        known.copies.append((name, frozenset(sources)))


def _counts_as_text(node: Node) -> bool:
    """A variable reference whose text is taken (not inside ``$((…))``, ``${#…}`` or ``${!…[@]}``)."""
    parent = node.parent
    while parent is not None and parent.type not in ("variable_assignment", "for_statement", "command", "program"):
        if parent.type == "arithmetic_expansion":
            return False
        if parent.type == "expansion" and _text(parent).startswith(("${#", "${!")):
            return False
        parent = parent.parent
    return True


def _names_set_by(program: str, words: list[str]) -> list[str]:
    """The variables ``read``/``mapfile``/``getopts``/``printf -v`` set (to values only run time knows)."""
    if program == "printf":
        return [words[i + 1] for i, w in enumerate(words[:-1]) if w == "-v"]
    if program == "getopts":
        return words[1:2]
    return [w for w in words if _IDENT.fullmatch(w)]


def _value_taken(name: Node, top: Node) -> bool:
    """In arithmetic ``top``: is the variable's value evaluated (not its length ``${#x}`` or indices ``${!a[@]}``)?"""
    parent = name.parent
    while parent is not None and parent != top:
        text = _text(parent) if parent.type == "expansion" else ""
        if text.startswith("${#") or (text.startswith("${!") and text.endswith(("[@]}", "[*]}"))):
            return False
        parent = parent.parent
    return True


def _in_double_brackets(node: Node) -> bool:
    """Inside ``[[ … ]]`` (which evaluates -eq's operands as arithmetic), not ``[ … ]``/``test`` (which never do)."""
    parent = node.parent
    while parent is not None and parent.type != "test_command":
        parent = parent.parent
    return parent is not None and bool(parent.children) and _text(parent.children[0]) == "[["


def _run_time_names(program: str, args: list[Word]) -> bool:
    """Does ``program`` (a builtin that takes variable names) get a name, or an expression, only run time knows?
    `let "$(cat)"`, `printf -v "$l" x`, `read "$l"`, `test -v "$l"`, `declare "$l"`, `unset "$l"`."""
    values = [w.value for w in args]
    if program == "let":
        return None in values
    if program == "printf":
        return any(v == "-v" and i + 1 < len(values) and values[i + 1] is None for i, v in enumerate(values))
    if program in ("test", "["):
        return any(v == "-v" and i + 1 < len(values) and values[i + 1] is None for i, v in enumerate(values))
    if program == "read":
        taking = False
        for value in values:
            if taking:
                taking = False
            elif value is None:
                return True
            elif value.startswith("-"):
                taking = value[-1] in "adinNptu"  # an option whose value follows (-p PROMPT, -u FD, -a NAME …)
        return False
    if program in ("declare", "typeset", "local", "readonly", "export", "unset"):
        return None in values
    return False


def _arithmetic_parts(node: Node) -> Iterator[Node]:
    """The nodes of an arithmetic expression, not entering command substitutions or a loop's body."""
    for child in node.children:
        if child.type in ("command_substitution", "process_substitution", "do_group", "compound_statement"):
            continue
        yield child
        yield from _arithmetic_parts(child)


def _in_arithmetic(node: Node) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.type in ("arithmetic_expansion", "c_style_for_statement") or (
            parent.type == "compound_statement" and parent.children and _text(parent.children[0]) == "(("
        ):
            return True
        if parent.type in ("command", "program"):
            return False
        parent = parent.parent
    return False


class _Walker:
    def __init__(self, parsed: Parsed, known: Known) -> None:
        self.parsed = parsed
        self.known = known

    def _word(self, node: Node) -> Word:
        return resolve_word(node, self.known)

    def _evaluated(self, names: Iterator[str] | list[str], where: str) -> None:
        """Variables bash evaluates as arithmetic or as a name: their value is code when it holds $(…)."""
        for name in names:
            code = self.known.code_in(name)
            filled = name in _FILLED and (self.known.from_input or self.known.substitutes)
            if name in self.known.from_input or filled:
                self.parsed.evaluates_run_time = True
            if code is None:
                self.parsed.evaluated_from_env.add(name)
            elif code:
                self.parsed.findings.append(
                    Finding("code-in-data", f"{where} evaluates ${name}, whose value can run commands")
                )
                self.parsed.evaluated_code += [w.value for w in self.known.assigned[name] if w and w.value]

    def _arithmetic(self, node: Node, where: str) -> None:
        if any(n.type == "command_substitution" for n in _descendants(node)) or "`" in _text(node):
            self.parsed.evaluates_run_time = True  # `(( $(cat) ))`: what the substitution prints is evaluated
        names: list[str] = []
        for part in _arithmetic_parts(node):
            if part.type == "variable_name" and _value_taken(part, node):
                names.append(_text(part))
            elif part.type == "expansion" and self.known.from_input and _value_taken(part, node):
                if _text(part).startswith("${!"):
                    self.parsed.evaluates_run_time = True  # `$((${!ref}))`: whatever ref names, input too
            elif part.type == "word":
                names += [m.group() for m in _IDENT.finditer(_text(part))]
        self._evaluated(names, where)

    def walk(self, node: Node, piped: bool = False) -> None:
        kind = node.type
        if kind == "ERROR" or node.is_missing:
            self.parsed.findings.append(Finding("parse-error", f"cannot parse near {_text(node)[:40]!r}"))
        if kind in ("command", "declaration_command", "unset_command"):
            self._command(node, piped)
            return
        if kind == "pipeline":
            previous: Command | None = None
            for index, child in enumerate(node.named_children):
                before = len(self.parsed.commands)
                self.walk(child, piped=piped or index > 0)
                if len(self.parsed.commands) > before:
                    self.parsed.commands[-1].upstream = previous
                    previous = self.parsed.commands[-1]
            return
        if kind == "redirected_statement":
            self._redirected(node, piped)
            return
        if kind == "function_definition":
            self._function(node)
        if kind == "file_redirect":
            self._redirect(node)
            return
        if kind == "herestring_redirect":
            return  # handled by the command that owns it
        self._code_in_data(node)
        if kind == "variable_assignment":
            name, word = _assignment(node)
            if node.parent is not None and node.parent.type != "command":
                self._name_argument(name, "an assignment")
            if word.prompt_expansion:
                self.parsed.findings.append(Finding("prompt-expansion", f"{name}=${{…@P}} expands a value as a prompt"))
        for child in node.named_children:
            self.walk(child, piped)

    def _code_in_data(self, node: Node) -> None:
        """Threat: places where bash evaluates a variable's value as code — arithmetic (`$((x))`, `((x))`,
        `for ((…))`, `[[ $x -eq 0 ]]`, subscripts), indirection (`${!x}`) and names given to builtins."""
        kind = node.type
        if kind in ("arithmetic_expansion", "c_style_for_statement"):
            self._arithmetic(node, "arithmetic")
        elif kind == "compound_statement" and node.children and _text(node.children[0]) == "((":
            self._arithmetic(node, "(( ))")
        elif (
            kind == "binary_expression"
            and _in_double_brackets(node)
            and any(c.type == "test_operator" and _text(c) in _ARITH_TEST_OPS for c in node.children)
        ):
            self._arithmetic(node, "[[ … -eq … ]]")
        elif kind == "unary_expression" and any(_text(c) == "-v" for c in node.children):
            for operand in node.named_children[1:]:
                self._name_argument(_text(operand), "[[ -v ]]")
                if _has_dynamic(operand):
                    self.parsed.evaluates_run_time = True  # `[[ -v $l ]]`: a name only run time knows
        elif kind == "expansion":
            text = _text(node)
            offset = _OFFSET.match(text)
            if offset:  # ${s:n}, ${s:1:n}: offset and length are arithmetic
                self._evaluated([m.group() for m in _IDENT.finditer(offset.group(1))], "a substring offset")
            if text.startswith("${!") and not text.endswith(("[@]}", "[*]}")):  # ${!a[@]}: a's indices, numbers
                self._evaluated([m.group() for m in _IDENT.finditer(text[3:])][:1], "${!…}")
            for sub in (c for c in node.named_children if c.type == "subscript"):
                index = sub.named_children[1:] if len(sub.named_children) > 1 else []
                for part in index:
                    self._arithmetic(part, "an array subscript")
                    if part.type == "word":
                        self._evaluated([m.group() for m in _IDENT.finditer(_text(part))], "an array subscript")

    def _name_argument(self, value: str | None, where: str) -> None:
        subscript = _SUBSCRIPTED.match(value or "")
        if subscript:  # `a[n]=3`, `unset a[n]`: the subscript is arithmetic
            self._evaluated([m.group() for m in _IDENT.finditer(subscript.group(1))], where)
        if value is not None and _CODE_SUBSCRIPT.search(value):
            self.parsed.evaluated_code.append(value)
            self.parsed.findings.append(
                Finding("code-in-data", f"{where} is given the name {value!r}, whose subscript runs commands")
            )

    def _command(self, node: Node, piped: bool) -> None:
        words: list[Word] = []
        command = Command(words=words, text=_text(node), piped=piped)
        if node.type in ("declaration_command", "unset_command") and node.children:
            keyword = _text(node.children[0])  # declare/local/export/…: a keyword token, not a named node
            words.append(Word(keyword, keyword))
        for child in node.named_children:
            kind = child.type
            if kind == "command_name":
                words.append(self._word(child.named_children[0]) if child.named_children else Word("", ""))
                self._nested(child)
            elif kind == "variable_assignment":
                name, value = _assignment(child, self.known)
                command.assignments.append((name, value))
                if value.prompt_expansion:
                    self.parsed.findings.append(
                        Finding("prompt-expansion", f"{name}=${{…@P}} expands a value as a prompt")
                    )
                self._name_argument(name, "an assignment")
                if any(w.value == "-n" for w in words):  # declare -n ref=NAME: NAME is evaluated as a name
                    self._name_argument(value.value, "a name reference")
                self._nested(child)  # A=$(rm …) runs rm
            elif kind == "file_redirect":
                self._redirect(child, command)
            elif kind == "herestring_redirect":
                body = child.named_children[-1] if child.named_children else None
                _drop_descriptor(words, child)  # `bash 0<<< '…'`: 0 is the descriptor, not a script
                if body is not None:
                    word = self._word(body)
                    command.stdin_text, command.stdin_dynamic = word.value, word.value is None
                    self._nested(body)
            else:
                words.append(self._word(child))
                self._nested(child)
        program = words[0].value if words else None
        if program in _NAME_TAKERS:
            for word in words[1:]:
                self._name_argument(word.value, program)
            if _run_time_names(program, words[1:]):
                self.parsed.evaluates_run_time = True
            if program == "let":
                self._evaluated([m.group() for w in words[1:] for m in _IDENT.finditer(w.value or "")], "let")
        self.parsed.commands.append(command)

    def _nested(self, node: Node) -> None:
        """Commands inside a word: $(…), `…`, <(…); and arithmetic inside it that evaluates variables."""
        self._code_in_data(node)
        if node.type in ("command_substitution", "process_substitution"):
            for inner in node.named_children:
                self.walk(inner)
            return
        if node.type == "expansion" and "`" in _text(node):
            # Threat: echo ${x:-`rm -rf ~`} - bash runs backticks inside ${...}, which tree-sitter keeps as text.
            for inner in re.findall(r"`((?:\\.|[^`\\])*)`", _text(node)):
                self.parsed.evaluated_code.append(f"$({inner})")
        for child in node.named_children:
            self._nested(child)

    def _redirected(self, node: Node, piped: bool) -> None:
        body = node.child_by_field_name("body") or (node.named_children[0] if node.named_children else None)
        before = len(self.parsed.commands)
        simple = body is not None and body.type in _SIMPLE_BODIES
        for child in node.named_children:
            owner = self.parsed.commands[-1] if simple and len(self.parsed.commands) > before else None
            if child is body:
                self.walk(child, piped)
            elif child.type == "heredoc_redirect":
                self._heredoc(child, owner)
            elif child.type == "herestring_redirect":
                word = self._word(child.named_children[-1]) if child.named_children else Word(None, "")
                if owner is not None:
                    _drop_descriptor(owner.words, child)
                    owner.stdin_text, owner.stdin_dynamic = word.value, word.value is None
                for extra in child.named_children[1:]:
                    self._extra_word(extra, owner)
            elif child.type == "file_redirect":
                # Bash attaches `a && b >o c` to `b`, the last simple command of the statement; a compound
                # statement takes no words after a redirection (bash: syntax error), so none are owned there.
                self._redirect(child, owner)
            else:
                self.walk(child, piped)

    def _heredoc(self, node: Node, owner: Command | None) -> None:
        quoted = False
        body_text: str | None = None
        dynamic = False
        for child in node.named_children:
            if child.type == "heredoc_start":
                quoted = any(q in _text(child) for q in ("'", '"', "\\"))
            elif child.type == "heredoc_body":
                body_text = _text(child)
                dynamic = not quoted and _has_dynamic(child)
                for inner in child.named_children:
                    if inner.type in ("command_substitution", "process_substitution"):
                        for cmd in inner.named_children:
                            self.walk(cmd)
            elif child.type in ("pipeline", "command", "redirected_statement", "list"):
                # `cat <<EOF | sh`: the rest of the pipeline hangs off the here-doc node.
                self.walk(child, piped=True)
            elif child.type == "file_redirect":
                self._redirect(child, owner)
            elif child.type not in ("heredoc_end",):
                self._extra_word(child, owner)  # `cat <<EOF -n y`: -n and y are cat's arguments
        if owner is not None:
            owner.stdin_text, owner.stdin_dynamic = (None if dynamic else body_text), dynamic

    def _redirect(self, node: Node, owner: Command | None = None) -> None:
        op = ""
        fd: str | None = None
        target: Word | None = None
        before = node.prev_sibling
        if (
            owner is not None
            and owner.words
            and owner.words[-1].raw.isdigit()
            and before is not None
            and before.end_byte == node.start_byte
        ):
            # `sh 0<&1`: digits written against a redirection are its file descriptor (bash), not a word of the
            # command — tree-sitter files them as a word, which made `0` a script for the shell.
            fd = owner.words.pop().raw
        for child in node.children:
            if child.type == "file_descriptor":
                fd = _text(child)
            elif not child.is_named:
                op = _text(child)
            elif target is None:
                target = self._word(child)
                self._nested(child)
            else:
                # Threat: `rm 2>/dev/null -rf ~`. tree-sitter files the words after a redirection's target
                # under the redirection; bash passes them to the command. Losing them hid `-rf`.
                self._extra_word(child, owner)
        if op == "<" and fd in (None, "0") and owner is not None:
            owner.stdin_file = True
        if target is not None and op not in (">&", "<&", ">&-", "<&-"):
            self.parsed.redirects.append(Redirect(op, target, fd))
        elif target is not None and target.value is not None and not target.value.isdigit() and target.value != "-":
            # `>& file` is bash for `&> file`.
            self.parsed.redirects.append(Redirect("&>", target, fd))

    def _extra_word(self, node: Node, owner: Command | None) -> None:
        if owner is None:
            self.parsed.findings.append(
                Finding("parse-error", f"a word after a redirection has no command to belong to: {_text(node)[:40]!r}")
            )
        else:
            owner.words.append(self._word(node))
        self._nested(node)

    def _function(self, node: Node) -> None:
        name_node = node.child_by_field_name("name") or (node.named_children[0] if node.named_children else None)
        if name_node is None:
            return
        name = _text(name_node)
        body = node.child_by_field_name("body") or node.named_children[-1]
        calls_itself = any(cmd.type == "command_name" and _text(cmd) == name for cmd in _descendants(body))
        spawns = any(n.type == "pipeline" or (not n.is_named and _text(n) == "&") for n in _descendants(body))
        if calls_itself and spawns:
            self.parsed.findings.append(Finding("fork-bomb", f"function {name!r} spawns copies of itself"))


def _assignment(node: Node, known: Known | None = None) -> tuple[str, Word]:
    """NAME=value (or NAME+=value, NAME[i]=value): the name as written and the value's word."""
    name_node = node.named_children[0] if node.named_children else None
    name = _text(name_node) if name_node is not None else ""
    value_nodes = node.named_children[1:]
    if not value_nodes:
        return name, Word("", "")
    if len(value_nodes) == 1:
        return name, resolve_word(value_nodes[0], known)
    return name, Word(None, _text(node))  # an array (a=(…)): judged by its parts' substitutions


def _descendants(node: Node) -> Iterator[Node]:
    for child in node.children:
        yield child
        yield from _descendants(child)


def _depth(node: Node, limit: int) -> int:
    """Depth of a syntax tree (iteratively: the tree may be deeper than Python's recursion limit)."""
    cursor = node.walk()
    depth = deepest = 0
    while True:
        if cursor.goto_first_child():
            depth += 1
            deepest = max(deepest, depth)
            if deepest > limit:
                return deepest
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return deepest
            depth -= 1


# Syntax that makes a line's words differ from what it says: values, output or input filled in at run time.
_SUBSTITUTING = frozenset(
    {
        "command_substitution",
        "process_substitution",
        "heredoc_redirect",
        "herestring_redirect",
        "simple_expansion",
        "expansion",
        "arithmetic_expansion",
    }
)


def substitutes(source: str) -> bool:
    """Does the line use substitutions, expansions or here-documents (``$(…)``, ``<(…)``, ``$x``, ``<<EOF``)?"""
    data = source.encode("utf-8", "surrogateescape")
    if len(data) > MAX_COMMAND_BYTES:
        return True
    return any(node.type in _SUBSTITUTING for node in _descendants(_parser().parse(data).root_node))


# Valid bash tree-sitter-bash does not take: `for f do …` / `for f; do …` (over "$@"), and a here-document whose body
# never ends (bash reads it to the end of the input).
_FOR_WITHOUT_IN = re.compile(r"\bfor(\s+)([A-Za-z_]\w*)(\s*;?\s*)(?=do\b)")
_HEREDOC_OPENER = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][\w.-]*)\1")


def _drop_descriptor(words: list[Word], redirect: Node) -> None:
    """Digits written against a redirection (`0<<<`, `0<&1`) are its file descriptor: not a word of the command."""
    before = redirect.prev_sibling
    if words and words[-1].raw.isdigit() and before is not None and before.end_byte == redirect.start_byte:
        words.pop()


def _joined_lines(source: str) -> str:
    """Threat: `r` backslash-newline `m -rf ~`: bash removes a backslash-newline before it splits words (outside
    single quotes), so the word is `rm`. The parser must see the line as bash does."""
    if "\\\n" not in source:
        return source
    out: list[str] = []
    single = double = False
    i = 0
    while i < len(source):
        char = source[i]
        if single:
            single = char != "'"
        elif char == "\\" and i + 1 < len(source):
            if source[i + 1] != "\n":
                out.append(source[i : i + 2])
            i += 2
            continue
        elif char == "'" and not double:
            single = True
        elif char == '"':
            double = not double
        out.append(char)
        i += 1
    return "".join(out)


def _bash_forms(source: str) -> str:
    """The same line in the forms the parser knows (bash runs them alike)."""
    text = _FOR_WITHOUT_IN.sub(lambda m: f'for{m.group(1)}{m.group(2)} in "$@"; ', _joined_lines(source))
    for found in _HEREDOC_OPENER.finditer(text):
        delimiter = found.group(2)
        if not re.search(rf"(?m)^\t*{re.escape(delimiter)}$", text[found.end() :]):
            text = text + ("" if text.endswith("\n") else "\n") + delimiter
    return text


def parse(source: str) -> Parsed:
    """Parse one command line (or script) into commands, redirects and findings.

    Raises TooComplex beyond the bounds above: a huge or deeply nested line must neither stall the server
    nor exhaust the walker's recursion.
    """
    data = source.encode("utf-8", "surrogateescape")
    if len(data) > MAX_COMMAND_BYTES:
        raise TooComplex(f"the command line is {len(data)} bytes; the limit is {MAX_COMMAND_BYTES}")
    parsed = Parsed(source)
    normal = _bash_forms(source)
    if normal != source:
        data = normal.encode("utf-8", "surrogateescape")
    tree = _parser().parse(data)
    root = tree.root_node
    nodes = root.descendant_count
    if nodes > MAX_SYNTAX_NODES:
        raise TooComplex(f"the command line has {nodes} syntax nodes; the limit is {MAX_SYNTAX_NODES}")
    if nodes > MAX_SYNTAX_DEPTH and _depth(root, MAX_SYNTAX_DEPTH) > MAX_SYNTAX_DEPTH:
        raise TooComplex(f"the command line is nested more than {MAX_SYNTAX_DEPTH} levels deep")
    known = _collect(root)
    _Walker(parsed, known).walk(root)
    if known.declared_integers & known.from_input:
        parsed.evaluates_run_time = True  # `declare -i n; read n`: bash evaluates what is assigned to n
    if root.has_error and not any(f.kind == "parse-error" for f in parsed.findings):
        parsed.findings.append(Finding("parse-error", "the command line does not parse"))
    return parsed
