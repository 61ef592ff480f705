"""Shells, interpreters and ``source``: the programs that run code of their own, looked through to what it runs.

``sh -c '…'`` runs the commands of its string, ``bash`` with no script runs its standard input, ``python3 -c
'os.system(sys.stdin.read())'`` hands its stdin to a shell, ``perl -e 'fork while fork'`` is a fork bomb, ``source
./notes`` runs whatever the file holds. Each ``expand_*`` here walks what such a program runs through ``Walk`` (the
expander, ``expander``), with the judges of what a feed carries (``feeds``); reading an interpreter's words and code
is ``interpreters``. Which programs wrap another command (``sudo``, ``xargs`` …) is ``wrappers``.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence

from mcp_server_guard.shell.strings.code_texts import literal_commands
from mcp_server_guard.shell.strings.commands import Word
from mcp_server_guard.shell.strings.feeds import (
    FETCHES,
    NO_FEED,
    STDIN_PATHS,
    Feed,
    Walk,
    judge_printed_code,
    judge_program_text,
    judge_stdin_lines,
    process_substitution,
    reads_descriptor,
)
from mcp_server_guard.shell.strings.interpreters import (
    FETCH_AND_RUN,
    RUNS_INPUT_LINES,
    SHELLS_OUT,
    evaluates_stdin,
    forks_repeatedly,
    hands_stdin_to_a_shell,
    interpreter_input,
)

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "fish", "csh", "tcsh", "posh", "rbash"})
INTERPRETERS = frozenset(
    {"python", "python2", "python3", "perl", "ruby", "node", "nodejs", "php", "lua", "deno", "bun", "osascript",
     "pypy", "pypy3", "ipython", "ipython3", "julia", "R", "Rscript", "pwsh", "powershell", "guile",
     "racket", "sbcl", "clisp", "ghci", "runghc", "irb", "jshell", "groovy", "scala", "kotlinc", "elixir", "iex",
     "erl", "escript", "crystal", "dart", "swift"}
)  # fmt: skip
# `source` of these runs a setup script of a tool (a virtualenv, rustup, nvm, the user's shell files): like
# running the tool. Any other file sourced is a script from data.
SOURCED_SETUP = (
    "*/bin/activate", "*/bin/activate.sh", "bin/activate", "~/.cargo/env", "$HOME/.cargo/env", "*/.cargo/env",
    "*/nvm.sh", "~/.bashrc", "~/.profile", "~/.bash_profile", "~/.zshrc", "/etc/profile", "/etc/profile.d/*",
    "*/conda.sh", "*/etc/profile.d/*", "*/env.sh", "*/setup.bash", "*/setup.sh", "/opt/ros/*",
)  # fmt: skip


def interpreter_name(program: str) -> str:
    """``python3.12`` is python; ``perl5.36`` is perl (versioned names of the interpreters)."""
    found = re.fullmatch(r"(python|pypy|perl|ruby|php|lua|luajit|node|ipython)[\d.]*", program)
    if not found:
        return ""
    return {"pypy": "python", "ipython": "python", "luajit": "lua"}.get(found.group(1), found.group(1))


def expand_shell(walk: Walk, rest: Sequence[Word], depth: int, feed: Feed) -> None:
    """What a shell run with the words ``rest`` runs: its ``-c`` string, a script it reads from stdin (``bash``,
    ``bash -s``, ``sh /dev/stdin``) or from a descriptor, what another command prints (``<(…)``); a script file
    runs like any program."""
    script: Word | None = None
    operand: Word | None = None  # the script file it runs, when not -c and not -s
    from_stdin = False  # -s: commands come from stdin, the remaining words are parameters
    i = 0
    while i < len(rest):
        value = rest[i].value
        if value is None:
            operand = rest[i]
            break
        if value == "--":
            if i + 1 < len(rest) and not from_stdin:
                operand = rest[i + 1]
            break
        if value[:1] in ("-", "+") and len(value) > 1 and not value.startswith("--"):
            # `bash +x`, `sh +o posix`, `bash +O extglob`: + sets an option off, like - sets it on.
            from_stdin = from_stdin or (value[0] == "-" and "s" in value[1:])
            if value[0] == "-" and "c" in value[1:]:
                script = rest[i + 1] if i + 1 < len(rest) else Word("", "")
                break
            if value[-1] in ("o", "O") and i + 1 < len(rest):
                i += 2  # -o NAME, and a cluster ending in it: `bash -eo pipefail`
                continue
            i += 1
            continue
        if value.startswith("--"):
            i += 2 if value in ("--rcfile", "--init-file") else 1
            continue
        if not from_stdin:
            operand = rest[i]
        break
    if script is not None:
        if script.value is None:
            if FETCHES.search(script.raw):
                walk.finding("remote-code", "sh -c runs a string fetched from the network")
            walk.finding("dynamic-shell-string", "sh -c runs a command string only known at run time")
        else:
            if script.filled:  # xargs -I{} sh -c 'x {}': the input becomes code
                walk.finding("dynamic-shell-string", "sh -c runs a string with run-time input in it")
            walk.line(script.value, depth + 1, feed)
        return
    reads = reads_descriptor(operand)
    if reads == "other":
        # Threat: `bash /dev/fd/4 4<&0`, `bash /proc/$$/fd/0`: a script read from a descriptor, stdin's or not.
        walk.finding("script-from-data", "a shell runs a script it reads from a file descriptor")
        return
    if operand is not None and reads != "stdin":
        if process_substitution(operand):
            # Threat: `bash <(curl …)` — the script is what another command prints.
            judge_printed_code(walk, operand.raw, "a shell runs what another command prints (<(…))")
        return  # `bash script.sh`: like running any program; the box is the boundary
    if depth > 0 and feed.kind == "none":
        # Threat: `find . -exec /bin/sh \;`, `nice /bin/sh`, `awk 'BEGIN{system("/bin/sh")}'`: a shell started
        # by another program with no script at all — an escape, never everyday work.
        walk.finding("shell-escape", "another program starts a shell with no script (an interactive shell)")
        return
    # `bash`, `bash -s`, `bash -`, `sh /dev/stdin`: the script is the shell's standard input.
    judge_program_text(walk, "shell", feed, lambda text: walk.line(text, depth + 1), "a shell script")


def expand_interpreter(walk: Walk, program: str, rest: list[Word], feed: Feed, depth: int = 0) -> None:
    """What an interpreter run with the words ``rest`` runs: code on its line (fork loops, code fetched and run,
    code that runs its stdin or hands it to a shell), or code it reads from stdin, a descriptor or ``<(…)``."""
    code = [w.value for w in rest if w.value is not None and not w.value.startswith("-")]
    if any(forks_repeatedly(c) for c in code):
        walk.finding("fork-bomb", f"{program} code forks in a loop")
    name = interpreter_name(program) or program
    given, script = interpreter_input(name, rest)
    for word in rest:
        if word.value is None and FETCHES.search(word.raw):
            # Threat: `python3 -c "$(curl -s URL)"` — code downloaded and run as it arrives.
            walk.finding("remote-code", f"{program} runs code fetched from the network")
    if given:
        joined = " ".join(c for c in code)
        if FETCH_AND_RUN.search(joined):
            walk.finding("remote-code", f"{program} code fetches code from the network and runs it")
        if RUNS_INPUT_LINES.search(joined):
            # `perl -ne 'system $_'`: each line of its stdin is a command line.
            judge_program_text(walk, "shell", feed, lambda text: walk.line(text, depth + 1), "a shell script")
        elif evaluates_stdin(joined) or hands_stdin_to_a_shell(joined):
            # `python3 -c 'exec(sys.stdin.read())'`: its stdin is code after all.
            judge_program_text(
                walk, name, feed, lambda text: judge_interpreter_text(walk, program, text, depth), "code"
            )
            if SHELLS_OUT.search(joined):
                # `os.system(sys.stdin.read())`, `perl -e 'system <STDIN>'`: the code hands it to a shell.
                judge_stdin_lines(walk, name, feed, depth)
        return
    if reads_descriptor(script) == "other":
        walk.finding("script-from-data", f"{program} runs code it reads from a file descriptor")
        return
    if script is not None and reads_descriptor(script) != "stdin":
        if process_substitution(script):
            judge_printed_code(walk, script.raw, f"{program} runs code a command prints (<(…))")
        return
    # The program text comes from stdin (`python3`, `python3 -`, `perl /dev/stdin`): judge what feeds it.
    judge_program_text(
        walk, name, feed, lambda text: judge_interpreter_text(walk, program, text, depth), f"{program} code"
    )


def judge_interpreter_text(walk: Walk, program: str, text: str, depth: int = 0) -> None:
    """Code an interpreter reads from stdin, judged as its -c/-e code is: fork loops, and the command lines
    and deletions it hands the system as literals."""
    if forks_repeatedly(text):
        walk.finding("fork-bomb", f"{program} code forks in a loop")
    for inner in literal_commands(text):
        walk.inner(program, inner, depth, NO_FEED)


def expand_source(walk: Walk, program: str, rest: list[Word], depth: int, feed: Feed) -> None:
    """`source FILE` / `. FILE` runs a file's text in this shell."""
    target = rest[0] if rest else None
    if target is None or target.value is None:
        if target is not None and process_substitution(target):
            judge_printed_code(walk, target.raw, f"{program} runs the commands another command prints (<(…))")
        else:
            walk.finding("source", f"{program} runs the commands of a file only known at run time")
        return
    if target.value in STDIN_PATHS:
        judge_program_text(walk, "shell", feed, lambda text: walk.line(text, depth + 1), "a shell script")
        return
    if not any(fnmatch.fnmatchcase(target.value, p) for p in SOURCED_SETUP):
        # Threat: `. ./notes` runs whatever the file holds; its text is not in the line (a script from data).
        walk.finding("source", f"{program} runs the commands written in {target.value!r}")
