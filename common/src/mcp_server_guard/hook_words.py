"""The words of a line a hook runs, as the shell splits them (``hook_runs``, ``git_dirs``): its comments cut where
the shell cuts them, the words that may name a file, and the command lines and code a line gives a shell or an
interpreter as a string."""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import glob
import itertools
import os
import posixpath
import re
import shlex
import stat
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from mcp_server_guard.patterns import deferred
from mcp_server_guard.shell_words import array_values, braced, ifs_split, operated, printf_values

if TYPE_CHECKING:
    from mcp_server_guard.shell.strings.commands import Command

__all__ = [
    "ANYWHERE",
    "GIT_DIR_WORD",
    "HERE_WORD",
    "IDENTIFIER",
    "PARAMETER_DEFAULT",
    "PATTERN",
    "READ_FROM",
    "RUNNERS",
    "RUNS_A_DIRECTORY",
    "SHELLS",
    "SHELL_VALUE_OPTIONS",
    "TOP_WORD",
    "OnPath",
    "assigned",
    "assigned_values",
    "code_strings",
    "git_commands",
    "in_place",
    "is_file",
    "loaded_by_option",
    "on_path",
    "parsed_lines",
    "path_like",
    "program_words",
    "put_on_path",
    "python_modules",
    "runner",
    "search_dirs",
    "search_files",
    "static_values",
    "uncommented",
]


def program_words(command: str, *, built: bool = False) -> list[str]:
    """The words of a command line (run through ``sh -c``) that may name a file: the program, and the files it is
    given (``python3 tools/clean.py``, ``'./my tools/clean'``: red team 5b F3). Split as the shell splits; past
    what that can split (``f() { ./x; }; f``), at blanks and shell punctuation. Options and assignments are not;
    with ``built``, a path built at run time is kept (as written)."""
    try:
        words = shlex.split(uncommented(command))
    except ValueError:
        words = re.split(r"[\s;&|(){}<>'\"`]+", command)
    # (``scripts/{lint,fmt}``; git's ``!`` before an alias's command: ``GIT_CONFIG_VALUE_0=!tools/x``, red team 163)
    words = [w.strip("(){};&|<>@,").lstrip("!") for v in words for w in braced(v.rstrip(";&|"))]
    # (an option's value that names a file: ``node --import=./x.mjs``, ``--require=./x.js``: red team 140 F4)
    words += [v for w in words if w.startswith("-") and "=" in w and ("/" in (v := w.partition("=")[2]) or "." in v)]
    return [w for w in words if w and not w.startswith("-") and (not w.startswith("$") or built) and "=" not in w]


_WORD_START = frozenset(" \t\n;&|()<>")


def uncommented(text: str) -> str:
    """``text`` with its comments cut as the shell cuts them: from a ``#`` that starts a word, outside quotes, to the
    end of its line. Threat (red team 135 F2): ``shlex``'s own comments start at a ``#`` inside a word (``$#``,
    ``${BRANCH#refs/}``, ``.#ci``), and what followed on the line (``&& sh scripts/lint.sh``) was never read."""
    if "#" not in text:
        return text
    out: list[str] = []
    quote, at = "", 0
    while at < len(text):
        char = text[at]
        if char == "\\" and quote != "'":
            out.append(text[at : at + 2])
            at += 2
            continue
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (not at or text[at - 1] in _WORD_START):
            end = text.find("\n", at)
            at = len(text) if end < 0 else end
            continue
        out.append(char)
        at += 1
    return "".join(out)


SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "busybox"})
_CODE_RUNNERS = frozenset({"node", "nodejs", "deno", "bun", "python", "python3", "pypy", "pypy3", "perl", "ruby",
                           "php", "lua"})  # fmt: skip
_LITERAL = deferred(r"""["'`]([^"'`\s]+)["'`]""")  # a quoted name
IDENTIFIER = deferred(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")  # a (dotted) name: a module's, a class's
_PYTHON = deferred(r"(?:python|pypy)[\d.]*")
# ``import a.b, c as d``, ``from a.b import c, d`` (not ``from . import x``).
_IMPORTS = deferred(r"\bimport\s+([\w.]+(?:\s+as\s+\w+)?(?:\s*,\s*[\w.]+(?:\s+as\s+\w+)?)*)")
_FROM = deferred(r"\bfrom\s+([A-Za-z_][\w.]*)\s+import\s+\(?\s*([\w\s,]+)")
_PERL_MODULE = deferred(r"\b(?:use|require)\s+([A-Za-z_]\w*(?:::\w+)*)")
_QUOTED = deferred(r"""["']([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)["']""")


def python_modules(line: str, program: str) -> list[str]:
    """The modules a Python code string imports by any spelling (``import a.b``, ``from a import b``,
    ``importlib.import_module('a.b')``, ``runpy.run_module('a.b')``: red team 149 F1); none for another program."""
    if not _PYTHON.fullmatch(posixpath.basename(program)):
        return []
    found: list[str] = []
    for names in _IMPORTS.findall(line):
        found += [name.split()[0] for name in names.split(",") if name.strip()]
    for module, names in _FROM.findall(line):
        found += [module, *(f"{module}.{name.split()[0]}" for name in names.split(",") if name.split())]
    found += _QUOTED.findall(line)
    return [name for name in dict.fromkeys(found) if IDENTIFIER.fullmatch(name)][:32]


def code_strings(line: str) -> list[str]:
    """The command lines a line gives a shell as a string (``bash -c 'sh scripts/lint.sh'``), and the files an
    interpreter's code string names by a quoted path (``node -e "require('./tools/check.js')"``, ``python3 -c
    "runpy.run_path('tools/x.py')"``): read as lines of their own."""
    try:
        words = shlex.split(uncommented(line))
    except ValueError:
        return []
    # A string of several words given to any program may be shell code it runs (``trap 'sh x.sh' EXIT``, ``flock
    # l -c '…'``, ``env -S '…'``, ``git submodule foreach '…'``: red team 140 F3): read as a line too.
    found: list[str] = [word for word in words[1:] if " " in word.strip()]
    for at, word in enumerate(words[:-1]):
        program = posixpath.basename(word)
        if program not in SHELLS and program.rstrip("0123456789.") not in _CODE_RUNNERS:
            continue
        for option, value in itertools.pairwise(words[at + 1 :]):
            if not option.startswith("-"):
                break
            if program in SHELLS and "c" in option.lstrip("-") and not option.startswith("--"):
                found.append(value)
            elif program not in SHELLS and option in ("-c", "-e", "-p", "--eval", "--print", "-E", "-r"):
                # Each quoted name as the program's operand: the program finds it by its own rules,
                # ``require('./tools/check')`` runs ``tools/check.js`` (red team 146 F1); each module Python code
                # imports, by any spelling, as ``-m`` (``-c 'from tools import check'``: red teams 142 F6, 149 F1).
                found += [f"{shlex.quote(program)} {shlex.quote(x)}" for x in _LITERAL.findall(value)[:64]]
                found += [f"{shlex.quote(program)} -m {x}" for x in python_modules(value, program)]
                if program.startswith("perl"):  # (``perl -e 'require Check'``, ``use App::Check``: red team 151 F2)
                    found += [f"perl -M{x}" for x in _PERL_MODULE.findall(value)[:32]]
    return list(dict.fromkeys(found))


SHELL_VALUE_OPTIONS = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})  # a shell option's value
_STARTUP_VARIABLES = frozenset({"BASH_ENV", "ENV"})  # a file every shell it starts sources
_ARRAY = deferred(r"(?:^|[\s;&|(])[A-Za-z_]\w*\+?=\(([^)]*)\)")
_PIECE = 32 << 10  # characters of a text parsed at a time (at line ends)
_SCRIPT_VALUE = deferred(r"^(?:\./|\.\./|/)?[\w@%+=:,./-]+\.(?:sh|bash|zsh|ksh|py|js|mjs|cjs|ts|rb|pl|php|lua)$")


def parsed_lines(text: str) -> tuple[list[str], bool]:
    """The simple commands a shell text runs, as bash's own grammar reads it (``shell.strings.parsing``, the parser
    the command rules use): one line each, its static words quoted, a word only run time knows as written — the
    commands in ``$(…)``, backticks, subshells, functions and loops, a line continued with ``\\``, a variable given a
    value before its use (``LINT=x.sh; sh "$LINT"``), ``cd "dir with blanks"`` —; and what a shell is given to run
    otherwise: ``BASH_ENV=x``, an alias's text, ``cat x | sh``, a path held in a variable. And whether every piece
    was read (False: past the parser's bounds — the reader then fails closed).

    Threat (red team 138): a hook's ``out=$(./scripts/lint.sh)``, ``cd tools; ./lint.sh``, ``sh -o nounset lint``
    read by splitting at blanks named nothing, and the script they ran landed unasked."""
    with _PARSED_LOCK:
        if (kept := _PARSED.get(text)) is not None:
            _PARSED.move_to_end(text)
            return list(kept[0]), kept[1]
    lines, whole = _parsed_lines(text)
    with _PARSED_LOCK:  # (a judgement reads the same hooks every call: each text parsed once, by its content)
        _PARSED[text] = (tuple(lines), whole)
        while len(_PARSED) > _PARSED_TEXTS or sum(map(len, _PARSED)) > _PARSED_BYTES:
            _PARSED.popitem(last=False)
    return lines, whole


_PARSED: collections.OrderedDict[str, tuple[tuple[str, ...], bool]] = collections.OrderedDict()
_PARSED_LOCK = threading.Lock()
_PARSED_TEXTS, _PARSED_BYTES = 64, 4 << 20


def _parsed_lines(text: str) -> tuple[list[str], bool]:
    from mcp_server_guard.shell.strings import TooComplex, analysis_budget, parse  # noqa: PLC0415 - the parser

    lines: list[str] = []
    whole = True
    for piece in _pieces(text):
        try:
            with analysis_budget():
                parsed = parse(piece)
        except (TooComplex, RecursionError, ValueError):
            whole = False
            continue
        for command in parsed.commands:
            words = [w.value if w.value is not None else w.raw for w in command.words]
            lines += _given_to_run(words, command.piped, command.upstream, command.stdin_text)
            lines += [f"source {shlex.quote(w.value)}" for name, w in command.assignments
                      if name in _STARTUP_VARIABLES and w.value]  # fmt: skip
            if words and posixpath.basename(words[0]) in SHELLS:
                words = [w for at, w in enumerate(words) if w not in SHELL_VALUE_OPTIONS
                         and (not at or words[at - 1] not in SHELL_VALUE_OPTIONS)]  # fmt: skip
            lines.append(" ".join(w if w.startswith(("$", '"$')) or "$" in w else shlex.quote(w) for w in words))
        # A path held in a variable (``LINT=scripts/lint.sh``, ``CHECKS=(scripts/lint.sh x.sh)``): run, perhaps.
        held = [w.value for values in parsed.assigned.values() for w in values if w is not None and w.value]
        held += [x.strip("'\"") for found in _ARRAY.finditer(piece) for x in found.group(1).split()]
        lines += [f"sh {shlex.quote(value)}" for value in held if _SCRIPT_VALUE.match(value)]
    return lines, whole


def _given_to_run(values: list[str], piped: bool, upstream: Command | None, stdin: str | None = None) -> list[str]:
    """What one command gives a shell to run besides its words: an alias's text, ``eval``'s, the files ``cat``
    pipes into a shell with no script of its own (``cat lint | sh``), the code an interpreter reads on its stdin
    (``stdin``: a here-document's or here-string's body)."""
    if not values:
        return []
    program = posixpath.basename(values[0])
    if program == "alias":
        return [value.partition("=")[2] for value in values[1:] if "=" in value]
    if program == "eval":
        return [" ".join(values[1:])]
    if program in SHELLS and piped and upstream is not None and not [v for v in values[1:] if not v.startswith("-")]:
        given = [w.value for w in upstream.words[1:] if w.value and not w.value.startswith("-")]
        return [f"sh {shlex.quote(name)}" for name in given]
    if program.rstrip("0123456789.") in _CODE_RUNNERS and (stdin or piped):
        # Code an interpreter reads on its stdin (``python3 - <<'EOF' … EOF``, ``<<< 'import x'``, ``echo … |
        # python3``): read as the code string it is given (red team 153 F1); a file piped in, as its script.
        given = [w.value for w in (upstream.words if upstream else []) if w.value]
        if not stdin and given and posixpath.basename(given[0]) == "cat":
            return [f"{shlex.quote(program)} {shlex.quote(name)}" for name in given[1:] if not name.startswith("-")]
        option = "-c" if program.startswith(("python", "pypy")) else "-e"
        code = (stdin or " ".join(given[1:])).replace("\n", "; ")  # (one line: the reader reads texts by line)
        return [f"{shlex.quote(program)} {option} {shlex.quote(code)}"]
    return []


def _pieces(text: str) -> list[str]:
    """``text`` in pieces of at most ``_PIECE`` characters, cut at line ends."""
    pieces: list[str] = []
    while len(text) > _PIECE:
        cut = text.rfind("\n", 0, _PIECE)
        cut = _PIECE if cut <= 0 else cut + 1
        pieces.append(text[:cut])
        text = text[cut:]
    return [*pieces, text] if text else pieces


# PATH set by any spelling: ``PATH=…``, ``PATH+=…``, ``export PATH="$(git rev-parse --show-toplevel)/tools:$PATH"``.
_PATH_GIVEN = deferred(r"(?:^|[\s;&|(])(?:export\s+)?PATH\+?=([^\n;&|#]+)")
# Where git looks for ``git-<name>`` first (``git --exec-path=tools lint``, ``GIT_EXEC_PATH=tools``: red team 149 F7).
_EXEC_PATH = deferred(r"(?:--exec-path[=\s]|(?:^|[\s;&|(])(?:export\s+)?GIT_EXEC_PATH=)([^\s;&|#]+)")
# The top of the work tree and the text's own directory, by the spellings hooks use (``$(pwd -P)``, backticks,
# ``$(cd "$(dirname "$0")" && pwd)``), written in place or held in a variable (``ROOT="$(git rev-parse
# --show-toplevel)"; PATH="$ROOT/tools:$PATH"``: red team 160).
_TOP = (r"(?:\$\{?PWD\}?|\$\(pwd(?:\s+-[LP])?\)|`pwd(?:\s+-[LP])?`|\$\(git rev-parse --show-toplevel\)"
        r"|`git rev-parse --show-toplevel`)")  # fmt: skip
_SELF = r"(?:\$0|\$\((?:readlink -f|realpath) (?:--\s+)?\"?\$0\"?\))"  # (``$(readlink -f "$0")``: red team 161 F4)
_DIRNAME = rf"(?:\$\(dirname (?:--\s+)?\"?{_SELF}\"?\)|`dirname (?:--\s+)?\"?\$0\"?`)"
_HERE = rf"(?:{_DIRNAME}|\$\(cd (?:--\s+)?\"?{_DIRNAME}\"?\s*(?:&&|;)\s*pwd(?:\s+-[LP])?\))"
_FROM_TOP = deferred(rf"^{_TOP}/?")
TOP_WORD = deferred(
    rf"{_TOP}/|\$\(git rev-parse --show-cdup\)"
)  # (``git -c include.path="$PWD/tools/gitconfig"``: ``./tools/gitconfig``, 163 F2)
_FROM_HERE = deferred(rf"^{_HERE}/?")
HERE_WORD = deferred(_HERE)  # (the text's own directory in a word: ``cd "$(dirname "$0")/../tools"``, 170 F2)
_ANCHOR = deferred(
    rf"""(?:^|[\s;&|(])(?:export\s+|local\s+|readonly\s+|declare\s+)?([A-Za-z_]\w*)=["']?(?:({_TOP})|{_HERE})"""
)
_HELD = deferred(r"^\$(?:\{(\w+)\}|(\w+))")
_VARIABLE = deferred(r"^\$\{?(\w+)")
# ``${PATH:+$PATH:}``, ``${PATH:+:$PATH}``: the alternate value, which the shell gives where the variable is set.
_ALTERNATE = deferred(r"\$\{\w+:?\+([^{}]*)\}")
PATTERN = "^"  # marks a pattern in what ``hook_runs.run_by_hooks`` says (``git_dirs``)
ANYWHERE = "**"  # (a place: any directory of the work tree, ``git_dirs._matches``)
_REST = deferred(r"(?<=[^/])\$.*")
_SEARCH_NAME = deferred(r"(?:PATH|LIB|LIBS|INC)$")  # (a search path itself: ``:$PATH`` is the rest of it, not a name)
_GIVEN = deferred(
    r"""(?:^|[\s;&|(])(?:export\s+|local\s+|readonly\s+|declare\s+)?([A-Za-z_]\w*)=("[^"\n]*"|'[^'\n]*'|[^\s;&|]+)"""
)
# ``$(realpath tools)``, ``$(readlink -f tools)``, ``$(cd tools && pwd)``: the directory they name (red team 161 F2).
_NAMING = deferred(
    r"""^\$\((?:realpath(?:\s+-\w+)*|readlink\s+-[fem]|cd(?:\s+-[LP])?)\s+(?:--\s+)?"?([^"()$`\s]+)"?"""
    r"""(?:\s*(?:&&|;)\s*pwd(?:\s+-[LP])?)?\)"""
)


def assigned_values(text: str) -> list[str]:
    """The values a text gives its variables, each as the command line a program reading it from its environment
    may take it for (``GIT_EXTERNAL_DIFF=tools/difftool git diff``, ``export GIT_SSH_COMMAND="tools/ssh -q"``,
    ``CHK='!tools/x' git --config-env=alias.chk=CHK chk``: red team 163 F1, F2)."""
    values = [value.strip("'\"") for _name, value in _GIVEN.findall(text)[:256]]
    return values + ifs_split(text, values)  # (split where the text sets IFS: ``IFS=,; $cmd``, red team 170 F3)


def _held(text: str) -> dict[str, str]:
    """The values a text gives its variables (the last of each): the top of the work tree or its own directory as
    the spelling that stands for it (``_anchors``), any other as written (``TOOLS=tools``, ``TOOLS="$ROOT/tools"``:
    red teams 160, 161 F3)."""
    given = {name: value.strip("'\"") for name, value in _GIVEN.findall(text) if not _SEARCH_NAME.search(name)}
    anchors = {name: "$PWD" if top else '$(dirname "$0")' for name, top in _ANCHOR.findall(text)}
    return given | {name: value for name, value in anchors.items() if not _SEARCH_NAME.search(name)}


def _resolved(value: str, held: dict[str, str]) -> str:
    """A search-path entry with the variables the text gives it expanded and ``realpath``/``readlink -f``/``cd …
    && pwd`` of a directory taken as that directory — a few rounds, as the shell would (``$TOOLS`` → ``$ROOT/tools``
    → ``$PWD/tools``)."""
    for _round in range(4):
        before = value
        value = _HELD.sub(lambda m: held.get(m[1] or m[2], m[0]), value, count=1)
        value = _NAMING.sub(lambda m: m[1], value, count=1)
        if value == before:
            break
    return value


def _entries(value: str) -> list[str]:
    """The entries of a search path's value, split at each ``:`` outside ``${…}``, ``$(…)`` and backticks
    (``"$PWD/tools${PATH:+:$PATH}"``: red team 161 F1)."""
    entries, depth, tick, start = [], 0, False, 0
    for at, char in enumerate(value):
        if char == "`":
            tick = not tick
        elif char in "({" and at and value[at - 1] == "$":
            depth += 1
        elif char in ")}" and depth:
            depth -= 1
        elif char == ":" and not depth and not tick:
            entries.append(value[start:at])
            start = at + 1
    return [*entries, value[start:]]


@dataclasses.dataclass
class OnPath:
    """The directories the hooks put first on PATH, and the words their texts name (a program's name alone may be
    one there: named once every text is read, a PATH a sourced file sets too — red team 140 F1)."""

    dirs: list[str]
    words: set[str] = dataclasses.field(default_factory=set)
    shell_read: set[str] = dataclasses.field(default_factory=set)  # (the files read for what they run, as shell)


# Words sh, dash, bash and zsh never look up on PATH: POSIX's reserved words and the builtins of all four (not ``[[``).
_NEVER_ON_PATH = frozenset(
    "if then else elif fi case esac for while until do done ! { } . : [ alias bg break cd command continue echo "  # noqa: SIM905
    "eval exec exit export false fg getopts hash jobs kill printf pwd read readonly return set shift test "
    "times trap true type ulimit umask unalias unset wait".split()
)
_ON_PATH_NAMES = 64  # names looked for in each PATH directory a hook sets, at most (past them: the directory whole)


def on_path(words: Iterable[str], bins: list[str]) -> list[tuple[str, str, tuple[str, ...]]]:
    """A word that is a program's name alone, found in a directory the hooks put first on PATH (husky's
    ``node_modules/.bin``: ``lint-staged`` in ``.husky/pre-commit``, red team 49 F3); in any directory of the work
    tree where the hooks put one on PATH that the reader cannot name (``ANYWHERE``: a pattern)."""
    if not bins:
        return []
    names = [w for w in dict.fromkeys(words) if w and "/" not in w and not w.startswith(("$", "~"))
             and w not in (".", "..") and w not in _NEVER_ON_PATH]  # fmt: skip
    if len(names) > _ON_PATH_NAMES:
        # (Each name protected there now or made later, red team 140 F1.) Past the names looked up, any file there may
        # be one a hook runs: each directory counts whole (red team 184 F2: the bound cut before the words no program
        # is named were dropped, and a 17th name went unread).
        return [(PATTERN + posixpath.join(b if any(c in b for c in "*?[") else glob.escape(b), "*"), "run", ())
                for b in bins[:16]]  # fmt: skip
    return [(in_place(b, word), "run", ()) for word in names for b in bins[:16]]


def in_place(place: str, word: str) -> str:
    """``word`` looked for in ``place``: a path, or a pattern (``PATTERN``) where ``place`` is one (any directory of
    the work tree, ``ANYWHERE``; a glob a line changes to)."""
    if any(c in place for c in "*?["):  # (``ANYWHERE``, or a glob a line changes to: ``cd tool?``)
        return PATTERN + posixpath.normpath(posixpath.join(place, glob.escape(word)))
    return os.path.join(place, word)


def put_on_path(text: str, base: str, work_tree: str) -> list[str]:
    """The directories a text puts on PATH (``PATH+=":$PWD/tools"``, ``PATH="$(dirname "$0")/../tools:$PATH"``):
    a program it then names alone may be there, made later too (``on_path``)."""
    givens = [*_PATH_GIVEN.findall(text), *_EXEC_PATH.findall(text)]
    return _directories(givens, base, work_tree, text, unknown=True)[:16]


def _directories(
    givens: Iterable[str], base: str, work_tree: str, text: str = "", *, unknown: bool = False
) -> list[str]:
    """The directories of search-path values (``a:b``), each from the top, or from the text's own directory
    (``$(dirname "$0")/…``, or a variable ``text`` gives either: ``_anchors``); none for an empty entry. With
    ``unknown``, an entry left to a variable or a command the text does not give (``"$TOOLS/bin"``, ``$(npm bin)``)
    is any directory of the work tree (``ANYWHERE``): dropping it made each new spelling a way past the reader (red
    team 161); the search path itself (``$PATH``, ``$PYTHONPATH``) and HOME are not."""
    found: list[str] = []
    held = _held(text) if "$" in text or "`" in text else {}
    for given in givens:
        for entry in _entries(_ALTERNATE.sub(lambda m: m[1], given.strip().strip("'\""))):
            value = _resolved(entry.strip("'\""), held)
            here = bool(_FROM_HERE.match(value))
            # (what follows a directory's name, ``$PWD/tools${PATH:+:$PATH}``, is the rest of the path: red team 161 F1)
            relative = _REST.sub("", (_FROM_HERE if here else _FROM_TOP).sub("", value))
            if (relative or here) and not relative.startswith(("$", "~", "`")):
                found.append(posixpath.normpath(posixpath.join(base if here else work_tree, relative)))
            elif unknown and _unknown(relative):
                found.append(posixpath.join(work_tree, ANYWHERE))
    return list(dict.fromkeys(found))


def _unknown(entry: str) -> bool:
    """Whether a search path's entry is one the reader cannot name: a variable the text never gives, a command's
    output — not the search path itself (``$PATH``, ``$PYTHONPATH`` alone) nor HOME (outside the work tree)."""
    if entry.startswith(("$(", "`")):
        return True
    variable = _VARIABLE.match(entry)
    if variable is None or variable[1] == "HOME":
        return False
    return not (_SEARCH_NAME.search(variable[1]) and re.fullmatch(r"\$\{?\w+\}?", entry))


# A language's search path set by the text (``PYTHONPATH=src``, ``export NODE_PATH=tools``, ``PERL5LIB``, ``RUBYLIB``,
# ``CLASSPATH``, ``LUA_PATH``), or given to the interpreter (``perl -Itools``, ``ruby -I lib``, ``java -cp tools``).
_SEARCH_GIVEN = deferred(
    r"(?:^|[\s;&|(])(?:export\s+)?(?!PATH\+?=)[A-Za-z_]\w*(?:PATH|LIB|LIBS|INC)\+?=([^\s;&|#]+)"
    r"|(?<![\w-])(?:-I|-cp|-classpath|--class-path|--module-path|--include-path)(?:\s+|=)?([^\s;&|#-][^\s;&|#]*)"
)


_PERL_LIB = deferred(
    r"(?<![\w-])-M-?lib=([^\s;&|#]+)|\b(?:use\s+lib\s+|sys\.path\.(?:insert\(\s*\d+\s*,|append\()\s*)[\"']([^\"']+)[\"']"
)  # (``perl -Mlib=tools``, ``use lib 'tools'``, a Python hook's ``sys.path.insert(0, "tools")``: red team 153 F4)


# Where Python reads compiled modules from instead of ``__pycache__`` (``PYTHONPYCACHEPREFIX=.pycache``, ``python3 -X
# pycache_prefix=.pycache``): a ``.pyc`` there runs, its source unread (red team 151 F6) — all of it counts.
_PYCACHE_PREFIX = deferred(r"(?:PYTHONPYCACHEPREFIX=|-X\s*pycache_prefix=)([^\s;&|#]+)")
_ARCHIVES = (".jar", ".zip", ".whl", ".egg", ".pyz", ".war", ".par")


def search_files(text: str, base: str, work_tree: str) -> tuple[list[str], list[str]]:
    """The archives a search path names as its entries (``CLASSPATH=lib/checks.jar``, ``PYTHONPATH=vendor.zip``: the
    classes and modules in them run — red team 151 F5; ``tools/*``: a pattern, ``*`` in it), and the directories a
    Python reads compiled modules from (``_PYCACHE_PREFIX``), counted whole."""
    givens = [path or option for path, option in _SEARCH_GIVEN.findall(text)]
    found = _directories(givens, base, work_tree, text)
    archives = [p for p in found if p.endswith(_ARCHIVES)]
    # (``CLASSPATH=tools/*``: every jar there, made later too — a pattern: red team 153)
    archives += [glob.escape(p[:-2]) + "/*.jar" for p in found if p.endswith("/*")]
    return archives[:64], _directories(_PYCACHE_PREFIX.findall(text), base, work_tree, text)[:16]


def search_dirs(text: str, base: str, work_tree: str) -> list[str]:
    """The directories a text has a language look for the modules it loads in (``_SEARCH_GIVEN``): the text's names
    are looked for there too, made later too (red team 146 F2: ``PYTHONPATH=src python3 -m app.lint`` runs
    ``src/app/lint.py``, ``perl -Itools -MCheck`` runs ``tools/Check.pm``) — not all of each: ``PYTHONPATH=.``."""
    givens = [path or option for path, option in _SEARCH_GIVEN.findall(text)]
    givens += [
        (option or used).replace(",", ":") for option, used in _PERL_LIB.findall(text)
    ]  # (``perl -Mlib=tools``: 149 F4)
    return _directories(givens, base, work_tree, text, unknown=True)[:16]


# A module an interpreter loads by an option (``perl -MCheck``, ``ruby -rcheck``, ``node --require x``, ``lua -l x``).
_LOADED = deferred(
    r"(?<![\w-])(?:-[Mm]-?|-r\s*|-l\s*|--require[=\s]+|--import[=\s]+|--loader[=\s]+)([\w./@-]*\w[\w:./@-]*)"
)


def loaded_by_option(line: str, words: list[str]) -> list[str]:
    """The modules a line's interpreter loads by an option, as paths (``perl -MApp::Check``: ``App/Check.pm``; the
    others as written, which the program completes by its own rules: red team 146 F2). ``words``: the line's
    ``program_words``."""
    if not words or not runner(words[0]) or "-" not in line:
        return []
    perl = posixpath.basename(words[0]).startswith("perl")
    found = [f"{name.replace('::', '/')}.pm" if perl else name for name in _LOADED.findall(line)]
    return [name for name in found if not name.startswith("-")][:16]


def git_commands(words: list[str]) -> list[str]:
    """The programs ``git <name>`` runs by that name from PATH (``git lint``: ``git-lint``, red team 146 F4)."""
    if not words or posixpath.basename(words[0]) != "git":
        return []
    return [f"git-{word}" for word in words[1:4] if re.fullmatch(r"[A-Za-z][\w.-]*", word)]


# A line that runs every file of a directory it names: ``run-parts dir``, ``find dir … -exec sh {} ;`` (or ``-exec
# {}``), ``find dir | xargs -n1 bash`` — not a tool given the files (``find . -name '*.sh' | xargs shellcheck``).
_INTERPRETERS = r"(?:\S*/)?(?:sh|bash|zsh|dash|ksh|source|\.|python[\d.]*|node|perl|ruby|php|\{\})(?=[\s;]|$)"
RUNS_A_DIRECTORY = deferred(
    rf"(?:^|[\s;&|(])run-parts\b|\s-(?:exec|execdir|ok|okdir)\s+{_INTERPRETERS}"
    rf"|\bxargs\b[^|;&\n]{{0,256}}?\s{_INTERPRETERS}"
)


# Words whose next operand is a file they run or read as code, whatever its name.
RUNNERS = frozenset(
    {"sh", "bash", "zsh", "dash", "ksh", "source", ".", "exec", "python", "python3", "node", "deno", "bun", "ruby",
     "perl", "php", "lua", "tsx", "ts-node", "source_env", "source_env_if_exists", "source_up", "source_up_if_exists",
     "dotenv", "dotenv_if_exists", "env_file", "import",
     # (every interpreter that runs a file it is given, there or made later: ``tclsh x.tcl``, red team 146 F3)
     "ash", "mksh", "fish", "csh", "tcsh", "nu", "xonsh", "pwsh", "powershell", "tclsh", "wish", "expect", "awk",
     "gawk", "mawk", "Rscript", "julia", "elixir", "escript", "groovy", "kotlin", "scala", "java", "jshell", "jbang",
     "swift", "dart", "crystal", "guile", "racket", "sbcl", "clojure", "bb", "esno", "vite-node", "zx", "luajit",
     "pypy", "pypy3", "osascript", "octave", "php-cgi", "ts-node-esm", "babel-node", "coffee"}
)  # fmt: skip


def runner(word: str) -> bool:
    """Whether a program runs the file it is given (``sh``, ``python3.11``, ``/usr/bin/node``, ``nodejs``)."""
    name = posixpath.basename(word)
    return name in RUNNERS or name == "nodejs" or name.rstrip("0123456789.") in RUNNERS


def is_file(word: str, places: list[str]) -> bool:
    """Whether ``word`` names a regular file from one of ``places`` (no link followed at its end)."""
    for place in places:
        with contextlib.suppress(OSError, ValueError):
            mode = os.lstat(os.path.join(place, word)).st_mode  # (a link too: red team 144 F2)
            if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
                return True
    return False


# ``${NAME:-default}``, ``${NAME=default}``: the default.
PARAMETER_DEFAULT = deferred(r"\$\{[A-Za-z_]\w*:?[-=]([^{}]*)\}")
READ_FROM = deferred(r"(?<![<\w])\d*<\s*([^\s<>&;|()'\"]+)")  # ``< file``, ``3<file`` (not ``<<``, ``<&``, ``<(``)
# (git's own directory by the spellings a hook has: ``$(git rev-parse --git-dir)``, ``$GIT_DIR``, ``$(dirname
# "$GIT_INDEX_FILE")`` — git sets both for every hook: red team 170 F2)
GIT_DIR_WORD = deferred(
    r"\$\(git rev-parse (?:--git-dir|--git-common-dir|--absolute-git-dir)\)|\$\{?GIT_DIR\}?(?!\w)"
    r"|\$\(dirname (?:--\s+)?\"?\$\{?GIT_INDEX_FILE\}?\"?\)"
)


def path_like(word: str) -> bool:
    """Whether a word of a hook's text is a path with a ``/``, named there or not (a program may complete it: red team
    151 F4) — a glob is named as a pattern where it is a word of the line (``hook_runs._named``), not completed here."""
    return "/" in word and not any(c in word for c in "*?[")


# A name the text gives a static value (``INSTALL_PYTHON=/p/.venv/bin/python3``, pre-commit's hook, quoted as shlex
# quotes it: ``'/my proj/.venv/bin/python3'``): used where it is expanded (``exec "$INSTALL_PYTHON" -mpre_commit``).
# (greedy, blanks after the value left to ``_static``: a lazy value before ``\s*$`` took quadratic time on a line of
# 32,000 blanks — red team 162 E1)
_ASSIGNED = deferred(r"^\s*(?:export\s+|local\s+|readonly\s+)?([A-Za-z_]\w*)=(\S.*)$", re.M)


def _static(given: str) -> str | None:
    """The value of an assignment's right side when it is one word the shell takes as it is (quotes removed, as the
    shell removes them: red team 49 F5); None when it is more, or expands anything."""
    try:
        words = shlex.split(uncommented(given))
    except ValueError:
        return None
    if len(words) != 1 or "$" in words[0] or "`" in words[0]:
        return None
    return words[0]


def static_values(text: str) -> dict[str, str]:
    """The names a text gives a static value (``_ASSIGNED``, ``_static``)."""
    given = {name: value for name, given in _ASSIGNED.findall(text) if (value := _static(given)) is not None}
    return given | printf_values(text) | array_values(text)  # (``printf -v``: red team 170 F3; arrays: 172 F1)


def assigned(line: str, values: dict[str, str]) -> str:
    """``line`` with the names its text gives a static value expanded (``$NAME``, ``${NAME}``), as it would read in
    double quotes (where hooks use them)."""
    if not values or "$" not in line:
        return line

    def value(found: re.Match[str]) -> str:
        name, operation = found.group(1) or found.group(3), found.group(2) or ""
        if name.startswith("!"):  # (``${!ref}``: the variable ``ref`` names — red team 172 F1)
            name = values.get(name[1:], "")
        if operation.startswith("[") and operation.endswith("]"):  # (an array's element: ``${parts[0]}``)
            name, operation = name + operation, ""
        if name not in values:
            return found.group(0)
        # (an operator applied as bash applies it: ``${x%.disabled}``, ``${x,,}`` — red team 170 F3)
        made = operated(values[name], operation) if operation else values[name]
        return found.group(0) if made is None else re.sub(r'([\\"])', r"\\\1", made)  # (as shlex reads "…")

    return re.sub(r"\$\{(!?\w+)([^{}]*)\}|\$(\w+)", value, line)
