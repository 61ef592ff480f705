"""The values a command line fixes, collected before its commands are walked (``walker``): every assignment
(standalone, ``declare``, ``for``, arithmetic, ``read`` and friends), which names hold input or copies of it, which
are integers; with the small syntax-tree helpers the walker shares (an assignment's name and value, a node's
descendants).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from mcp_server_guard.patterns import deferred
from mcp_server_guard.shell.strings.commands import Word
from mcp_server_guard.shell.strings.words import INDIRECT, Known, resolve_word, text_of

if TYPE_CHECKING:
    from tree_sitter import Node

# Variables that set an option of the program they are given to, as its command line would: pip's and uv's
# configuration by environment (red team 12 F10: ``PIP_BREAK_SYSTEM_PACKAGES=1 pip install x`` is ``pip install
# --break-system-packages x``). A flag's variable counts when its value is true to the program; a value option's
# whenever it is set.
_PIPS = deferred(r"pip(-?3(\.\d+)?)?")
_OPTION_VARIABLES: dict[str, tuple[re.Pattern[str], str, bool]] = {
    "PIP_BREAK_SYSTEM_PACKAGES": (_PIPS, "--break-system-packages", False),
    "PIP_USER": (_PIPS, "--user", False),
    "PIP_TARGET": (_PIPS, "--target", True),
    "PIP_PREFIX": (_PIPS, "--prefix", True),
    "PIP_ROOT": (_PIPS, "--root", True),
    "PIP_PYTHON": (_PIPS, "--python", True),
    "UV_SYSTEM_PYTHON": (re.compile("uv"), "--system", False),
    "UV_BREAK_SYSTEM_PACKAGES": (re.compile("uv"), "--break-system-packages", False),
    "UV_PYTHON": (re.compile("uv"), "--python", True),
    # The environment uv pip installs into, and uv sync's (red team 20 F6): an interpreter named by its prefix.
    "VIRTUAL_ENV": (re.compile("uv"), "--python", True),
    "CONDA_PREFIX": (re.compile("uv"), "--python", True),
    "UV_PROJECT_ENVIRONMENT": (re.compile("uv"), "--project-environment", True),
    # A configuration file chosen for the call may set any of those (``[install] break-system-packages = true``):
    # taken as the worst (pip has no option naming one); /dev/null is none.
    "PIP_CONFIG_FILE": (_PIPS, "--break-system-packages", True),
    "UV_CONFIG_FILE": (re.compile("uv"), "--config-file", True),
}
_FALSE = frozenset({"", "0", "false", "no", "off", "n", "f"})
_ARITH_ASSIGN = frozenset({"=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^=", "++", "--"})
IDENT = deferred(r"[A-Za-z_][A-Za-z0-9_]*")


def with_option_variables(words: Sequence[Word], assignments: Sequence[tuple[str, Word]]) -> list[Word]:
    """``words`` with the options that the variables set for the command stand for (``_OPTION_VARIABLES``) added at
    its end, where a rule reads them as it reads the command line's own; a value only run time knows counts as set."""
    if not words or words[0].value is None:
        return list(words)
    program = posixpath.basename(words[0].value)
    pip = pip_words(words)
    if pip:
        program = "pip"  # `python3 -m pip …`: pip's variables
    added: list[Word] = []
    for name, word in assignments:
        entry = _option_entry(name)
        if entry is None or not entry[0].fullmatch(program) or not sets_option(name, word):
            continue
        _pattern, option, takes_value = entry
        if _canonical(name) == "PIP_CONFIG_FILE":
            added.append(Word(option, f"{name}=…"))
        elif takes_value:
            added.append(Word(f"{option}={word.value if word.value is not None else ''}", f"{name}=…"))
        else:
            added.append(Word(option, f"{name}=…"))
    return [*words, *added]


def sets_option(name: str, word: Word) -> bool:
    """Whether the variable ``name`` (one of pip's or uv's, ``_OPTION_VARIABLES``) given ``word`` sets its option: a
    flag's when its value is true to the program, a value option's whenever it is set (a configuration file's
    unless it is /dev/null); a value only run time knows counts as set."""
    entry = _option_entry(name)
    if entry is None:
        return False
    if word.value is None:
        return True
    if _canonical(name).endswith("_CONFIG_FILE"):
        return word.value not in ("", "/dev/null")
    return word.value != "" if entry[2] else word.value.lower() not in _FALSE


def _canonical(name: str) -> str:
    """pip reads ``PIP_<name>`` in any case of the name (``PIP_User=1`` is ``--user``: red team 20 F3); uv's are
    exact."""
    return "PIP_" + name[4:].upper() if name.startswith("PIP_") else name


def _option_entry(name: str) -> tuple[re.Pattern[str], str, bool] | None:
    return _OPTION_VARIABLES.get(_canonical(name))


# Programs that run no other program (``sed`` can, with ``e``; ``find`` with ``-exec``; git and npm run hooks and
# scripts): a pip variable given to them reaches no pip.
_RUN_NOTHING = frozenset(
    {"echo", "printf", "cat", "head", "tail", "ls", "pwd", "cd", "pushd", "popd", "true", "false", ":", "test", "[",
     "[[", "export", "declare", "typeset", "local", "readonly", "unset", "set", "shift", "wait", "sleep", "exit",
     "return", "mkdir", "touch", "cp", "mv", "rm", "ln", "chmod", "grep", "egrep", "fgrep", "rg", "wc", "sort", "uniq",
     "cut", "tr", "jq", "basename", "dirname", "date", "stat", "du", "df", "diff", "cmp", "realpath", "readlink",
     "which", "type", "tee"}
)  # fmt: skip


def option_variables_reach(words: Sequence[Word], variables: Sequence[tuple[str, Word]]) -> str:
    """The first of pip's and uv's variables (``_OPTION_VARIABLES``) set for a command that is neither pip nor uv and
    may run them (``make install``, ``./install.sh``, a function, ``nice``), or "". Threat (red team 19 F6):
    ``PIP_BREAK_SYSTEM_PACKAGES=1 make install`` — whatever pip the program runs installs outside the project, and
    no rule sees that pip's line (nor one a hook, a script, ``sed e`` or ``find -exec`` runs: red team 20 F5)."""
    if not words:
        return ""
    head = words[0].value
    program = posixpath.basename(head) if head is not None else ""
    if head is not None and (program in _RUN_NOTHING or _PIPS.fullmatch(program)
                             or program == "uv" or pip_words(words)):  # fmt: skip
        return ""
    return next((name for name, word in variables if sets_option(name, word) and _points_out(name, word)), "")


# Where an environment or interpreter lives: given to a test runner or make it is everyday (`VIRTUAL_ENV=.venv make
# test`); judged only where pip or uv itself is given it.
_LOCATIONS = frozenset({"VIRTUAL_ENV", "CONDA_PREFIX", "UV_PYTHON", "UV_PROJECT_ENVIRONMENT", "PIP_PYTHON"})


def _points_out(name: str, word: Word) -> bool:
    """Whether a pip or uv variable given to another program may send what it installs outside the project: a flag,
    a configuration, or a place that is absolute, in the home, above, or only known at run time."""
    canonical = _canonical(name)
    if canonical in _LOCATIONS:
        return False
    entry = _OPTION_VARIABLES[canonical]
    if not entry[2] or canonical.endswith("_CONFIG_FILE") or word.value is None:
        return True
    return word.value.startswith(("/", "~", ".."))


def exported_words(words: Sequence[Word]) -> Iterator[tuple[str, Word]]:
    """The ``NAME=value`` words of an ``export`` (``declare -x``) line: each name and its value."""
    for word in words:
        text = word.value if word.value is not None else word.raw
        name, eq, value = text.partition("=")
        if eq and IDENT.fullmatch(name):
            yield name, Word(value if word.value is not None else None, word.raw)


def _set_option(value: str, letter: str, name: str) -> bool:
    """Whether a word of ``set`` turns on the option ``letter`` (``-a``, ``-ea``) or, after ``-o``, ``name``."""
    return (value.startswith("-") and not value.startswith("--") and letter in value[1:]) or value == name


def line_exports(
    commands: Sequence[tuple[Sequence[Word], Sequence[tuple[str, Word]]]], assigned: Mapping[str, Sequence[Word | None]]
) -> dict[str, Word]:
    """Every variable a line exports, wherever in it: a function defined before the export runs after it, a loop
    runs its body again (``f() { pip install x; }; export PIP_USER=1; f``). ``commands``: each simple command's
    words and assignments; ``assigned``: every assignment of the line (``Parsed.assigned``). ``export``/``declare -x
    NAME=value``, ``export NAME`` of a name the line assigns, and with ``set -a`` (``set -o allexport``) every
    assignment of the line (red team 19 F6); of several values, one that sets a pip or uv option."""
    named: set[str] = set()
    out: dict[str, Word] = {}
    allexport = keyword = False
    for words, _assignments in commands:
        if words and words[0].value == "set":
            values = [w.value or "" for w in words[1:]]
            allexport = allexport or any(_set_option(v, "a", "allexport") for v in values)
            keyword = keyword or any(_set_option(v, "k", "keyword") for v in values)
    for words, assignments in commands:
        if not words:
            continue
        head = words[0].value
        values = [w.value or "" for w in words[1:]]
        if keyword:  # `set -k`: NAME=value anywhere among a command's words is its variable (red team 20 F5)
            out.update((n, w) for n, w in exported_words(words[1:]) if n not in out)
        if head == "export" or (head in ("declare", "typeset", "local", "readonly")
                                and any(re.fullmatch(r"-\w*x\w*", v) for v in values)):  # fmt: skip
            out.update(exported_words(words[1:]))
            out.update(assignments)  # (the parser gives a declaration's NAME=value so)
            named.update(v for v in values if IDENT.fullmatch(v))
    for name, given in assigned.items():
        if name in out or not (allexport or name in named):
            continue
        kept = [w if w is not None else Word(None, f"${name}") for w in given] or [Word(None, f"${name}")]
        out[name] = next((w for w in kept if sets_option(name, w)), kept[0])
    return out


_PYTHON = deferred(r"(python|pypy)[\d.]*")
_PYTHON_VALUED = frozenset("cmWXQ")


def pip_words(words: Sequence[Word]) -> list[Word]:
    """``python -m pip ARGS`` (``-mpip``, ``-Im pip``) as pip's own words, ``pip ARGS``; [] for any other command: a
    Python run with pip as its module is pip (red team 19: its rules never saw ``python3 -m pip install
    --break-system-packages``)."""
    if not words or not _PYTHON.fullmatch(posixpath.basename(words[0].value or "")):
        return []
    i = 1
    while i < len(words):
        value = words[i].value
        if value is not None and re.search(r"(^|/)pip(/__main__\.py)?/?$", value):
            return [Word("pip", words[i].raw), *words[i + 1 :]]  # the pip package run as a script
        if value is None or not value.startswith("-") or value == "-":
            return []  # a script, or only run time knows
        if value.startswith("--"):
            i += 1
            continue
        # A cluster of Python's one-letter options (``-Bm``): -c, -m, -W and -X take the rest of the word or the next
        # word as their value.
        for at, letter in enumerate(value[1:], start=1):
            if letter not in _PYTHON_VALUED:
                continue
            attached = value[at + 1 :]
            taken = attached or (words[i + 1].value if i + 1 < len(words) else None)
            if letter == "c":
                return []  # code, not a module
            if letter == "m":
                rest = list(words[i + 1 :] if attached else words[i + 2 :])
                if taken == "ensurepip":  # installs pip as `pip install` would: its --user, --root
                    return [Word("pip", words[i].raw), Word("install", "ensurepip"), *rest]
                if taken is None or not (_PIPS.fullmatch(taken) or taken == "pip.__main__"):
                    return []
                return [Word("pip", words[i].raw), *rest]
            i += 0 if attached else 1  # -W/-X's value
            break
        i += 1
    return []


def collect(root: Node) -> Known:
    """Every assignment in the line (standalone, ``declare``, ``for``, arithmetic, ``read`` and friends)."""
    known = Known()

    def add(name: str, word: Word | None) -> None:
        known.assigned.setdefault(name.partition("[")[0], []).append(word)

    for node in descendants(root):
        kind = node.type
        known.substitutes = known.substitutes or kind == "command_substitution"
        if kind == "variable_assignment" and node.parent is not None:
            name, word = assignment(node)
            if node.parent.type == "c_style_for_statement":
                known.integers.add(name)
            elif node.parent.type != "command":  # `X=1 cmd` sets X for cmd only, not for the line
                add(name, None if "+=" in text_of(node)[: len(name) + 2] else word)
            _note_input(known, name.partition("[")[0], node.named_children[1:])
        elif kind == "for_statement":
            variable = node.child_by_field_name("variable")
            values = node.children_by_field_name("value")
            if variable is not None:
                if not values:  # `for x; do` iterates over "$@"
                    add(text_of(variable), None)
                for value in values:
                    add(text_of(variable), resolve_word(value))
                _note_input(known, text_of(variable), values)
        elif kind in ("binary_expression", "postfix_expression", "unary_expression") and _in_arithmetic(node):
            operators = {text_of(c) for c in node.children if not c.is_named}
            target = next((c for c in node.named_children if c.type == "variable_name"), None)
            if target is not None and operators & _ARITH_ASSIGN:
                known.integers.add(text_of(target))
        elif kind == "declaration_command":
            flags = [text_of(c) for c in node.named_children if c.type == "word" and text_of(c).startswith("-")]
            if any("i" in flag[1:] for flag in flags):
                for child in node.named_children:
                    target = child.child_by_field_name("name") if child.type == "variable_assignment" else child
                    if target is not None and target.type == "variable_name":
                        known.declared_integers.add(text_of(target))
        elif kind == "command":
            name_node = node.child_by_field_name("name")
            program = text_of(name_node) if name_node is not None else ""
            if program in ("read", "mapfile", "readarray", "getopts", "printf"):
                arguments = node.children_by_field_name("argument")
                words = [resolve_word(w).value or text_of(w) for w in arguments]  # `read -r "n"` sets n
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


def _note_input(known: Known, name: str, values: Sequence[Node]) -> None:
    """``name`` is given ``values``: input when they hold a substitution (`x=$(cat)`), a copy of names that
    hold input (``$n``, ``${n:1}``; not ``${#n}``, ``${!a[@]}``, ``$((…))``, which are numbers), ``${!ref}``, or a
    bare name (`y=x`: arithmetic on y evaluates x)."""
    sources: set[str] = set()
    for value in values:
        if value.type == "word" and IDENT.fullmatch(text_of(value)):
            sources.add(text_of(value))
        for node in [value, *descendants(value)]:
            if node.type in ("command_substitution", "process_substitution"):
                known.from_input.add(name)
                return
            if node.type == "expansion" and text_of(node).startswith(("${#", "${!")):
                text = text_of(node)
                if text.startswith("${!") and not text.endswith(("[@]}", "[*]}")):
                    sources.add(INDIRECT)  # ${!ref}: the value of whatever ref names
                continue
            if node.type == "variable_name" and _counts_as_text(node):
                sources.add(text_of(node))
    if sources:
        known.copies.append((name, frozenset(sources)))


def _counts_as_text(node: Node) -> bool:
    """A variable reference whose text is taken (not inside ``$((…))``, ``${#…}`` or ``${!…[@]}``)."""
    parent = node.parent
    while parent is not None and parent.type not in ("variable_assignment", "for_statement", "command", "program"):
        if parent.type == "arithmetic_expansion":
            return False
        if parent.type == "expansion" and text_of(parent).startswith(("${#", "${!")):
            return False
        parent = parent.parent
    return True


def _names_set_by(program: str, words: list[str]) -> list[str]:
    """The variables ``read``/``mapfile``/``getopts``/``printf -v`` set (to values only run time knows)."""
    if program == "printf":
        return [words[i + 1] for i, w in enumerate(words[:-1]) if w == "-v"]
    if program == "getopts":
        return words[1:2]
    return [w for w in words if IDENT.fullmatch(w)]


def _in_arithmetic(node: Node) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.type in ("arithmetic_expansion", "c_style_for_statement") or (
            parent.type == "compound_statement" and parent.children and text_of(parent.children[0]) == "(("
        ):
            return True
        if parent.type in ("command", "program"):
            return False
        parent = parent.parent
    return False


def assignment(node: Node, known: Known | None = None) -> tuple[str, Word]:
    """NAME=value (or NAME+=value, NAME[i]=value): the name as written and the value's word."""
    name_node = node.named_children[0] if node.named_children else None
    name = text_of(name_node) if name_node is not None else ""
    value_nodes = node.named_children[1:]
    if not value_nodes:
        return name, Word("", "")
    if len(value_nodes) == 1:
        return name, resolve_word(value_nodes[0], known)
    return name, Word(None, text_of(node))  # an array (a=(…)): judged by its parts' substitutions


def descendants(node: Node) -> Iterator[Node]:
    """Every node below ``node``, depth first, in source order."""
    for child in node.children:
        yield child
        yield from descendants(child)
