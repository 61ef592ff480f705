"""The string layer's look-through tables on their own: what a wrapper, a program's own "run this" option, code in
another language and an unknown program's options hand on to run. The engine's verdicts over the same forms are in
test_shell_policy.py; these pin the pieces it is built from, so a table that stops seeing a form fails here by
name."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from mcp_server_guard.shell.strings.code_texts import literal_commands, program_text_runs
from mcp_server_guard.shell.strings.parsing import Word, parse
from mcp_server_guard.shell.strings.run_options import option_commands
from mcp_server_guard.shell.strings.unknown_programs import run_texts
from mcp_server_guard.shell.strings.wrappers import unwrap


def _argv(line: str) -> tuple[str, list[Word]]:
    [command] = parse(line).commands
    program = command.words[0].value
    assert program is not None
    return program, command.words[1:]


def _lines(found: Any) -> list[str]:
    """What a table found, as text: argv lists joined, command-line strings as they are."""
    if isinstance(found, str):
        return [found]
    if isinstance(found, list):
        return [" ".join(w.value or "?" for w in words) for words in found]
    return []


@pytest.mark.parametrize(
    ("line", "runs"),
    [
        ("sudo -u root rm -rf /srv", "rm -rf /srv"),
        ("nice -n 5 make", "make"),
        ("timeout -s KILL 5 sh -c 'x'", "sh -c x"),
        ("strace -o log -f curl x", "curl x"),
        ("chroot /mnt bash", "bash"),
        ("xargs -0 -n1 rm -f", "rm -f ?"),  # xargs appends what it reads: unknown
        ("xargs -I{} mv {} /tmp", "mv ? /tmp"),
    ],
)
def test_a_wrapper_hands_on_the_command_after_its_own_options(line: str, runs: str) -> None:
    assert runs in _lines(unwrap(*_argv(line)))


def test_a_wrapper_that_runs_nothing_hands_on_nothing() -> None:
    assert unwrap(*_argv("setarch --list")) is None
    assert unwrap(*_argv("chrt -p 5 1234")) is None


@pytest.mark.parametrize(
    ("line", "runs"),
    [
        ("git rebase -x 'make test' main", "make test"),
        ("rsync -e 'ssh -p 2' a b:", "ssh -p 2"),
        ("find . -name x -exec rm {} ;", "rm"),
    ],
)
def test_a_programs_own_run_option_is_seen(line: str, runs: str) -> None:
    program, rest = _argv(line)
    found = [text for inner in [*option_commands(program, rest), unwrap(program, rest)] for text in _lines(inner)]
    assert any(runs in text for text in found), found


def test_code_in_another_language_hands_its_shell_literals_on() -> None:
    assert "rm -rf /tmp/x" in literal_commands("import os\nos.system('rm -rf /tmp/x')\n")
    awk = program_text_runs("awk", 'BEGIN { system("shutdown now") }')
    assert awk is not None and "shutdown now" in _lines(awk[0])
    assert program_text_runs("no-such-language", "x") is None


def test_an_unknown_programs_command_option_is_judged_as_a_line() -> None:
    program, rest = _argv("mytool --exec 'rm -rf /' file")
    assert any("rm -rf /" in text for inner in run_texts(program, rest) for text in _lines(inner))


def test_code_with_a_run_of_backslashes_is_read_in_bounded_time() -> None:
    """Threat: a regular expression that backtracks exponentially (`(?:\\\\.|(?!\\1).)+` over backslashes): a
    40-character `python3 -c` line stalled the policy check for minutes, and every later call behind it. (In a
    process of its own: a regular expression holds the GIL, so a thread could not be timed out.)"""
    scan = (
        "from mcp_server_guard.shell.strings.code_texts import literal_commands, program_text_runs\n"
        "code = '\"' + '\\\\' * 40 + '\"x'\n"
        "literal_commands(f'system({code})'); literal_commands(f'{code}.execute()')\n"
        "program_text_runs('sed', 's/' + '\\\\' * 40 + '/x/e')\n"
    )
    subprocess.run([sys.executable, "-c", scan], check=True, timeout=30)


@pytest.mark.parametrize(
    "line",
    [
        "echo '" + "IFS=" * 50000 + "'",
        "echo '" + "while true; do " * 13000 + "'",
        "printf '" + "a" * 32768 + "[" + "b" * 32768 + "'",
        "echo '" + "(" * 65536 + "' | sh",
    ],
    ids=["ifs-run", "loop-heads", "open-subscript", "open-parens"],
)
def test_a_line_built_to_make_a_pattern_backtrack_is_judged_in_bounded_time(line: str) -> None:
    """Threat: a pattern whose every match attempt scans to the end of the line (quadratic): a 64 KiB line held
    the policy check, and with it every other call of the server (the GIL), for seconds; 200 KiB for minutes."""
    judge = (
        "import sys\n"
        "from mcp_server_guard.policy import load_policy\n"
        "from mcp_server_guard.shell.strings.parsing import TooComplex\n"
        "from mcp_server_guard.shell.strings.rules import PolicyEngine\n"
        "engine = PolicyEngine(load_policy().shell_exec, '/usr/bin:/bin', roots=['/w'], home='/h')\n"
        "try:\n    engine.decide(sys.stdin.read())\nexcept TooComplex:\n    pass  # refused as too complex: bounded\n"
    )
    subprocess.run([sys.executable, "-c", judge], input=line, text=True, check=True, timeout=20)


@pytest.mark.parametrize(
    "line",
    [
        "x" + ".then" * 50000,
        "echo; (for x in a" * 11000,
        "echo " + "$((" * 66000,
        "echo " + "é $(( 1 + 0x$x " * 12000,
        "echo " + "${x:a " * 33000,
        "cat " + "<>a " * 50000,
        "echo " + ";& " * 66000,
        "f() for x in a; do :; done; " * 6600,
    ],
    ids=["names-after-then", "word-lists", "dollar-parens", "base-prefixes", "offsets", "read-write", "case-ends",
         "bare-bodies"],
)  # fmt: skip
def test_the_repairs_of_a_line_the_parser_rejects_take_bounded_time(line: str) -> None:
    """Threat (time): a repair whose pattern scans to the end of the line from each of thousands of starts (a name
    before `()`, a word list before `{`), or that follows each `$((` to its parenthesis, or parses the whole line
    again per try: a 200 KiB line held the check for minutes. (The repairs alone: the parser's own first reading of
    such a line is another matter.)"""
    repair = "import sys\nfrom mcp_server_guard.shell.strings.parsing import _repaired\n_repaired(sys.stdin.read())\n"
    subprocess.run([sys.executable, "-c", repair], input=line, text=True, check=True, timeout=20)


def test_a_long_chain_of_copies_of_what_was_read_is_followed_in_bounded_time() -> None:
    """Threat (time): `a1=$a2; a2=$a3; …; aN=$(cat)` written backwards made the closure over copies one pass per
    name (quadratic: 20,000 copies, minutes)."""
    settle = (
        "from mcp_server_guard.shell.strings.words import Known\n"
        "known = Known(from_input={'a20000'})\n"
        "known.copies = [(f'a{i}', frozenset({f'a{i + 1}'})) for i in range(20000)]\n"
        "known.settle_inputs()\n"
        "assert 'a0' in known.from_input\n"
    )
    subprocess.run([sys.executable, "-c", settle], check=True, timeout=20)
