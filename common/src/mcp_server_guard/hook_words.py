"""The words of a line a hook runs, as the shell splits them (``hook_runs``, ``git_dirs``): its comments cut where
the shell cuts them, the words that may name a file, and the command lines and code a line gives a shell or an
interpreter as a string."""

from __future__ import annotations

import itertools
import posixpath
import re
import shlex

from mcp_server_guard.patterns import deferred

__all__ = ["code_strings", "program_words", "uncommented"]


def program_words(command: str, *, built: bool = False) -> list[str]:
    """The words of a command line (run through ``sh -c``) that may name a file: the program, and the files it is
    given (``python3 tools/clean.py``, ``'./my tools/clean'``: red team 5b F3). Split as the shell splits; past
    what that can split (``f() { ./x; }; f``), at blanks and shell punctuation. Options and assignments are not;
    with ``built``, a path built at run time is kept (as written)."""
    try:
        words = shlex.split(uncommented(command))
    except ValueError:
        words = re.split(r"[\s;&|(){}<>'\"`]+", command)
    words = [w.strip("(){};&|<>@,") for w in words]
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


_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "busybox"})
_CODE_RUNNERS = frozenset({"node", "nodejs", "deno", "bun", "python", "python3", "perl", "ruby", "php", "lua"})
_LITERAL = deferred(r"""["'`]([^"'`\s]*(?:/|\.(?:py|js|mjs|cjs|ts|sh|rb|pl|php|lua)\b)[^"'`\s]*)["'`]""")


def code_strings(line: str) -> list[str]:
    """The command lines a line gives a shell as a string (``bash -c 'sh scripts/lint.sh'``), and the files an
    interpreter's code string names by a quoted path (``node -e "require('./tools/check.js')"``, ``python3 -c
    "runpy.run_path('tools/x.py')"``): read as lines of their own."""
    try:
        words = shlex.split(uncommented(line))
    except ValueError:
        return []
    found: list[str] = []
    for at, word in enumerate(words[:-1]):
        program = posixpath.basename(word)
        if program not in _SHELLS and program.rstrip("0123456789.") not in _CODE_RUNNERS:
            continue
        for option, value in itertools.pairwise(words[at + 1 :]):
            if not option.startswith("-"):
                break
            if program in _SHELLS and "c" in option.lstrip("-") and not option.startswith("--"):
                found.append(value)
            elif program not in _SHELLS and option in ("-c", "-e", "-p", "--eval", "--print", "-E", "-r"):
                found.append(" ".join(shlex.quote(x) for x in _LITERAL.findall(value)))
    return found
