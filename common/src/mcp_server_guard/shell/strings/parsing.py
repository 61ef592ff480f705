"""Shell command lines, parsed with tree-sitter-bash into the facts a policy decides on.

Every simple command in the line is found — in pipelines, lists, subshells, ``{ }``, ``$(…)``,
backticks, process substitution, function bodies, ``if``/``for``/``while``/``case`` — with its words
resolved the way bash would resolve them when that is static (quotes removed, ``\\`` escapes and
``$'…'`` decoded) and marked unknown when it is not (expansions, substitutions, globs). What cannot be
decided statically is reported as a finding, never silently dropped.

This is analysis for a policy that *advises*; the kernel sandbox is the boundary.

Here: ``parse`` (the line's text, put in the forms tree-sitter-bash takes, parsed within bounds) and
``substitutes``; what a parse yields is ``commands``, the walk of the tree ``walker``, a word's value ``words``.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from mcp_server_guard.shell.strings.commands import Command, Finding, Parsed, Redirect, Word
from mcp_server_guard.shell.strings.walker import descendants, walk_tree

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

# What parse() yields, importable from here as before (with parse() and its bounds).
__all__ = [
    "MAX_COMMANDS",
    "MAX_COMMAND_BYTES",
    "MAX_SYNTAX_DEPTH",
    "MAX_SYNTAX_NODES",
    "Command",
    "Finding",
    "Parsed",
    "Redirect",
    "TooComplex",
    "Word",
    "parse",
    "substitutes",
]

# What one command line may cost to analyse (beyond these the line is refused, not judged): its size, its
# syntax tree's size and depth (the walker recurses per level), and the simple commands it holds.
MAX_COMMAND_BYTES = 256 * 1024
MAX_SYNTAX_NODES = 20_000
MAX_SYNTAX_DEPTH = 256
MAX_COMMANDS = 1000


class TooComplex(ValueError):
    """The line is too big or too deeply nested to be analysed within the bounds above."""


@functools.cache
def _parser() -> Parser:
    # Loaded on first use: the file servers share this library and never parse shell.
    import tree_sitter_bash  # noqa: PLC0415
    from tree_sitter import Language, Parser  # noqa: PLC0415

    return Parser(Language(tree_sitter_bash.language()))


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
    return any(node.type in _SUBSTITUTING for node in descendants(_parser().parse(data).root_node))


# Valid bash tree-sitter-bash does not take: `for f do …` / `for f; do …` (over "$@"), and a here-document whose body
# never ends (bash reads it to the end of the input).
_FOR_WITHOUT_IN = re.compile(r"\bfor(\s+)([A-Za-z_]\w*)(\s*;?\s*)(?=do\b)")
_HEREDOC_OPENER = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][\w.-]*)\1")


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


# Valid bash tree-sitter-bash rejects outright, each with a form of the same commands it reads (used only where the
# line does not parse as it is, and only when the repaired line parses whole): an empty word list (`for x in ; do`,
# which runs nothing: judged as if it ran, over unknown words), a subshell condition with no `;` before
# `then`/`do` (`if (cmd) then`), a number's base prefix before an expansion (`$((0x$(printf ff)))`,
# `$((16#$y))`: the value aside, the same substitutions run), a substring with a third colon.
_REPAIRS = (
    (re.compile(r"\bfor(\s+)([A-Za-z_]\w*)(\s+)in[ \t]*(?=;|\n)"), r'for\1\2\3in "$@"'),
    (re.compile(r"\)([ \t]*)(?=(?:then|do)\b)"), r");\1"),
    (re.compile(r"\b(0[xX]|\d+#)(?=\$)"), r"\g<1>0+"),
    # `${x:0:-3:3}`: bash reads the rest as the length's expression (and fails when it runs): the same word
    (re.compile(r"\$\{([A-Za-z_]\w*):([^:{}]*):([^:{}]*):[^{}]*\}"), r"${\1:\2:\3}"),
)


def _repaired(text: str) -> str:
    for pattern, replacement in _REPAIRS:
        text = pattern.sub(replacement, text)
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
    if tree.root_node.has_error and (repaired := _repaired(normal)) != normal:
        again = _parser().parse(repaired.encode("utf-8", "surrogateescape"))
        if not again.root_node.has_error:
            tree = again  # (the findings' texts quote the repaired line)
    root = tree.root_node
    nodes = root.descendant_count
    if nodes > MAX_SYNTAX_NODES:
        raise TooComplex(f"the command line has {nodes} syntax nodes; the limit is {MAX_SYNTAX_NODES}")
    if nodes > MAX_SYNTAX_DEPTH and _depth(root, MAX_SYNTAX_DEPTH) > MAX_SYNTAX_DEPTH:
        raise TooComplex(f"the command line is nested more than {MAX_SYNTAX_DEPTH} levels deep")
    walk_tree(parsed, root)
    if root.has_error and not any(f.kind == "parse-error" for f in parsed.findings):
        parsed.findings.append(Finding("parse-error", "the command line does not parse"))
    return parsed
