"""What an interpreter's command line and code say about what it runs: the options that take a value, code given
on the line (-c, -e, -m …), code that reads its stdin as code or hands it to a shell, code that fetches code and
runs it, and fork loops. Read by the policy engine (``rules``); string checks, advisory like the rest of it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mcp_server_guard.patterns import deferred
from mcp_server_guard.shell.strings.parsing import Word

# Code that forks in a loop: `perl -e 'fork while fork'`, `python -c 'while 1: os.fork()'`, `ruby -e 'loop{fork}'`.
_FORK_LOOP = r"(\bwhile\b|\bloop\b|\bfor\s*\(\s*;\s*;|\buntil\b|\brepeat\b).*\w*fork\b|\w*fork\b.*\b(while|until)\b"


# ... or over and over by other means: `perl -e '{fork; redo}'`, `goto`, `retry`, `1.times`, `.each`, a function that
# calls itself after forking.
_FORK_AGAIN = (
    r"\bfork\b.*\b(redo|goto|retry|times|each|map|recurse)\b|\b(redo|goto|retry)\b.*\bfork\b"
    r"|\bfork\b.*\b(iter\s*\(\s*int|count\s*\(|cycle\s*\(|repeat\s*\(\s*\w+\s*\))"  # [os.fork() for _ in iter(int, 1)]
)


def forks_repeatedly(code: str) -> bool:
    if re.search(_FORK_LOOP, code, re.DOTALL) or re.search(_FORK_AGAIN, code, re.DOTALL):
        return True
    # def f(): os.fork(); f()  /  sub f { fork; f() }: a function that forks and calls itself.
    for found in re.finditer(r"\b(?:def|sub|function)\s+(\w+)", code):
        body = code[found.end() :]
        if re.search(r"\bfork\b", body) and re.search(rf"\b{re.escape(found.group(1))}\b", body):
            return True
    return False


# Options of an interpreter that take a value (`python3 -W ignore`, `perl -I lib`, `node -r ./x`): the value is not
# the script. And the options that give the code itself (or a module to run).
_INTERPRETER_VALUES: dict[str, frozenset[str]] = {
    "python": frozenset({"W", "X", "Q", "check-hash-based-pycs"}),
    "perl": frozenset({"I", "M", "m", "C"}),
    "ruby": frozenset({"I", "r", "E", "C", "encoding", "external-encoding", "internal-encoding", "require"}),
    "node": frozenset({"r", "require", "import", "loader", "experimental-loader", "input-type", "C", "conditions",
                       "stack-size", "env-file", "title", "max-old-space-size"}),
    "php": frozenset({"d", "c", "z"}),
    "lua": frozenset({"l"}),
}  # fmt: skip


_CODE_GIVEN = frozenset({"c", "e", "E", "eval", "p", "print", "m", "execute", "command"})


# Modules that are a REPL reading code from stdin: `python3 -m code`, `-m pdb`, `-m IPython`.
_REPL_MODULES = frozenset({"code", "pdb", "IPython", "idlelib", "bpython", "ptpython", "asyncio"})


def interpreter_input(name: str, words: Sequence[Word]) -> tuple[bool, Word | None]:
    """(code given on the line — -c/-e/-m …, the script operand — its first operand, or None)."""
    values = _INTERPRETER_VALUES.get(name, frozenset())
    i = 0
    while i < len(words):
        value = words[i].value
        if value is None:
            return False, words[i]
        if value == "--":
            return False, words[i + 1] if i + 1 < len(words) else None
        if value == "-" or not value.startswith("-"):
            return False, words[i]
        option = value.lstrip("-").partition("=")[0]
        cluster = value[1:] if not value.startswith("--") else ""
        # the code letter of a cluster (`perl -ne`, `python3 -Bc`), else its first (`python3 -mpytest`)
        letter = next((c for c in cluster if c in "ceE"), cluster[:1])
        if (
            option in _CODE_GIVEN
            or (name == "php" and letter == "r")
            or (letter and letter in "ceEm" and name != "php")
        ):
            if (option == "m" or letter == "m") and name == "python":
                module = value[2:] or (words[i + 1].value if i + 1 < len(words) else "") or ""
                return module not in _REPL_MODULES, None
            if name == "php" and letter == "f":
                return False, words[i + 1] if len(value) == 2 and i + 1 < len(words) else Word(value[2:], value[2:])
            return True, None
        takes = option in values or (letter and letter in values and len(value) == 2 and not value.startswith("--"))
        i += 2 if takes and "=" not in value else 1
    return False, None


# Code that runs what it reads from stdin: exec(sys.stdin.read()), eval(input()), perl -ne 'system $_' …
_EVALUATES_STDIN = deferred(
    r"\b(?:exec|eval|system|spawn|execSync|popen)\b.{0,80}(?:stdin|input\s*\(|readFileSync\s*\(\s*0|<STDIN>|STDIN|"
    r"\$_\b|\$stdin|ARGF|gets\b|readline|open\s*\(\s*0\b|/dev/stdin)|(?:^|[;{\s])(?:system|exec|eval)\s*\(?\s*\$_\b"
    # perl's and ruby's backticks and qx// around what was read: `$_`, qx($line)
    r"|`[^`]{0,80}(?:\$_\b|<STDIN>|STDIN|gets\b|\$line\b)|\bqx\s*.{0,3}\$_\b",
    re.DOTALL,
)


RUNS_INPUT_LINES = deferred(r"(?:^|[;{\s(])(?:system|exec|qx|`)\s*\(?\s*\$_\b|os\.system\s*\(\s*line\b")


# Code that fetches code and runs it: exec(urlopen(…).read()), eval get(…), eval(file_get_contents("https://…")).
FETCH_AND_RUN = deferred(
    r"\b(?:exec|eval|then\s*\(\s*eval)\b.{0,160}\b(?:urlopen|urllib|requests\.get|httpx|get\s*\(|URI\.open|open-uri|"
    r"Net::HTTP|fetch\s*\(|file_get_contents\s*\(\s*['\"]https?:|https?://)"
    r"|\b(?:urlopen|requests\.get|URI\.open|fetch\s*\(|file_get_contents\s*\(\s*['\"]https?:).{0,160}\b(?:exec|eval)\b",
    re.DOTALL,
)


# Code that hands what it read to a shell, not to its own interpreter (with _EVALUATES_STDIN: what it read is stdin).
SHELLS_OUT = deferred(
    r"\b(?:system|popen|spawn|spawnSync|execSync|exec_command|subprocess|check_output|getoutput|getstatusoutput|"
    r"shell\s*=\s*True|IO\.popen|Open3|qx)\b|`"
)


# Code that reads its stdin, wherever the reading stands (`for l in sys.stdin: os.system(l)`).
_READS_STDIN = deferred(
    r"sys\.stdin|\binput\s*\(|readFileSync\s*\(\s*0|<STDIN>|\bSTDIN\b|\$stdin|\bARGF\b|\bgets\b|/dev/stdin|"
    r"\bopen\s*\(\s*0\b|process\.stdin|io\.read|os\.Stdin"
)


def hands_stdin_to_a_shell(code: str) -> bool:
    """Code that reads its stdin and runs a shell (in either order): what it read may be what the shell runs."""
    return _READS_STDIN.search(code) is not None and SHELLS_OUT.search(code) is not None


def evaluates_stdin(code: str) -> bool:
    return _EVALUATES_STDIN.search(code) is not None


__all__ = [
    "FETCH_AND_RUN",
    "RUNS_INPUT_LINES",
    "SHELLS_OUT",
    "evaluates_stdin",
    "forks_repeatedly",
    "hands_stdin_to_a_shell",
    "interpreter_input",
]
