"""The shell policy: ordered deny/ask/allow rules over every command a line would run.

A command line is parsed (``shellparse``), every simple command is looked through its wrappers
(``sudo``, ``env``, ``timeout``, ``xargs``, ``find -exec``, ``sh -c '…'`` …) and each command found is
matched against the rules in order; the first match decides for that command, and the line takes
the strictest decision of all (deny > ask > allow). What cannot be decided statically is a
*finding* (``eval``, ``$cmd``, ``curl … | sh``, parse errors …) decided by a ``detect`` rule, or
``undecidable`` (ask or deny, never allow) when no rule names it.

String policies are advisory: a program can always do what ``rm`` does. The kernel is the boundary.
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field

from mcp_server_guard.policy import INFORMATIONAL, Action, Rule, ShellPolicy
from mcp_server_guard.shell.parsing import (
    MAX_COMMANDS,
    Command,
    Finding,
    Parsed,
    Redirect,
    TooComplex,
    Word,
    expand_braces,
    parse,
)

_SEVERITY: dict[str, int] = {"allow": 0, "ask": 1, "deny": 2}
_MAX_DEPTH = 8
_DYNAMIC = "\x00dynamic"  # stands for an argument only run time knows; matches no glob

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "fish", "csh", "tcsh", "posh", "rbash"})
INTERPRETERS = frozenset(
    {"python", "python2", "python3", "perl", "ruby", "node", "nodejs", "php", "lua", "deno", "bun", "osascript"}
)
# Options that take a value, per program, so the first positional (the subcommand) is found.
VALUE_OPTIONS: dict[str, frozenset[str]] = {
    "git": frozenset({"C", "c", "git-dir", "work-tree", "namespace", "config-env", "super-prefix", "exec-path"}),
    "apt": frozenset({"o", "c", "t", "a", "option", "config-file", "target-release"}),
    "apt-get": frozenset({"o", "c", "t", "a", "option", "config-file", "target-release"}),
    "dnf": frozenset({"c", "setopt", "installroot", "releasever", "repo", "enablerepo", "disablerepo", "x"}),
    "yum": frozenset({"c", "setopt", "installroot", "releasever", "enablerepo", "disablerepo", "x"}),
    "systemctl": frozenset({"H", "M", "t", "p", "n", "o", "host", "machine", "type", "property", "lines", "output"}),
    "docker": frozenset({"H", "c", "l", "host", "context", "config", "log-level"}),
    "kubectl": frozenset({"n", "namespace", "context", "cluster", "s", "server", "kubeconfig"}),
    "brew": frozenset(),
}


@dataclass(frozen=True)
class Verdict:
    """The decision for a whole line, the rule that made it, and what the parser saw."""

    action: Action
    rule: str | None
    reason: str
    trigger: str  # the command (or finding) that decided
    commands: tuple[str, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    findings: tuple[Finding, ...] = ()


@dataclass
class _Args:
    flags: set[str] = field(default_factory=set)
    values: dict[str, list[str]] = field(default_factory=dict)
    positionals: list[str] = field(default_factory=list)


def _parse_args(program: str, args: Sequence[str]) -> _Args:
    """Split arguments into flags (short letters, long names), option values and positionals."""
    takes_value = VALUE_OPTIONS.get(program, frozenset())
    out = _Args()
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            out.positionals.extend(args[i:])
            break
        if arg.startswith("--") and len(arg) > 2:
            name, eq, value = arg[2:].partition("=")
            out.flags.add(name)
            if eq:
                out.values.setdefault(name, []).append(value)
            elif name in takes_value and i < len(args):
                out.values.setdefault(name, []).append(args[i])
                i += 1
            continue
        if arg.startswith("-") and len(arg) > 1 and arg != _DYNAMIC:
            letters = arg[1:]
            out.flags.add(letters)  # single-dash long options: find -delete, java -jar
            for pos, letter in enumerate(letters):
                out.flags.add(letter)
                if letter in takes_value:
                    value = letters[pos + 1 :]
                    if not value and i < len(args):
                        value = args[i]
                        i += 1
                    out.values.setdefault(letter, []).append(value)
                    break
            continue
        out.positionals.append(arg)
    return out


def _glob(value: str, patterns: Sequence[str], *, fold: bool = False) -> bool:
    if fold:
        value = value.lower()
    return any(fnmatch.fnmatchcase(value, p.lower() if fold else p) for p in patterns)


def rule_matches(rule: Rule, argv: Sequence[str]) -> bool:
    """Does ``rule`` match one effective command (argv[0] is the program's path or name)?"""
    program = posixpath.basename(argv[0])
    if not _glob(program, rule.programs):
        return False
    args = list(argv[1:])
    parsed = _parse_args(program, args)
    if rule.subcommands and not (parsed.positionals and parsed.positionals[0] in rule.subcommands):
        return False
    if any(not (parsed.flags & set(group)) for group in rule.flags):
        return False
    if rule.args and not any(_glob(a, rule.args) for a in args):
        return False
    option_ok = not rule.option_values or any(
        _glob(value, patterns, fold=True)
        for option, patterns in rule.option_values.items()
        for value in parsed.values.get(option, [])
    )
    return option_ok


@dataclass
class _Found:
    """One effective command, or one finding, with where it came from."""

    argv: list[str] | None
    text: str
    finding: Finding | None = None


class _Expander:
    """Looks through wrappers and shell strings to the commands that would really run."""

    def __init__(self) -> None:
        self.found: list[_Found] = []
        self.redirects: list[Redirect] = []

    def finding(self, kind: str, detail: str) -> None:
        self.found.append(_Found(None, detail, Finding(kind, detail)))

    def line(self, source: str, depth: int) -> None:
        if depth > _MAX_DEPTH:
            self.finding("too-deep", "shell strings nested too deeply to analyse")
            return
        parsed: Parsed = parse(source)
        self.redirects.extend(parsed.redirects)
        for redirect in parsed.redirects:
            if redirect.writes and redirect.target.static is None:
                self.finding("dynamic-redirect", f"redirect target {redirect.target.raw!r} is only known at run time")
            elif redirect.writes and redirect.target.static not in ("/dev/null", "/dev/stdout", "/dev/stderr"):
                self.finding("write-redirect", f"'{redirect.op} {redirect.target.raw}' writes a file")
        for item in parsed.findings:
            self.found.append(_Found(None, item.detail, item))
        for command in parsed.commands:
            self.command(command, depth)

    def command(self, command: Command, depth: int) -> None:
        words = command.words
        if not words:
            return
        if any(w.prompt_expansion for w in words):
            self.finding("prompt-expansion", "${var@P} expands a value like a prompt (it can run commands)")
        self.argv(words, command, depth)

    def argv(self, words: Sequence[Word], command: Command | None, depth: int) -> None:
        if not words:
            return
        head = words[0]
        text = command.text if command is not None else " ".join(w.raw for w in words)
        if head.static is None:
            self.finding("dynamic-command", f"the program name {head.raw!r} is only known at run time")
            return
        if len(self.found) >= MAX_COMMANDS:
            raise TooComplex(f"the command line runs more than {MAX_COMMANDS} commands")
        argv = [words[0].value or ""]
        for word in words[1:]:
            if word.value is None:
                argv.append(_DYNAMIC)
            elif word.glob and "{" in word.raw:
                argv.extend(expand_braces(word.value))  # rm {-rf,x} is rm -rf x
            else:
                argv.append(word.value)
        self.found.append(_Found(argv, text))
        program = posixpath.basename(argv[0])
        rest = list(words[1:])
        if program == "eval":
            self.finding("eval", "eval runs a string built at run time")
        elif program in ("source", "."):
            self.finding("source", f"{program} runs the commands of another file")
        elif program in SHELLS or (program == "busybox" and rest and rest[0].value in SHELLS):
            self._shell(rest if program != "busybox" else rest[1:], command, depth)
        elif program in INTERPRETERS:
            if command is not None and command.piped and not _has_code_arg(rest):
                self.finding("pipe-to-shell", f"{program} runs code piped into it")
        else:
            inner = _unwrap(program, rest)
            if isinstance(inner, str):
                self.line(inner, depth + 1)
            elif inner is _DYNAMIC_STRING:
                self.finding("dynamic-shell-string", f"{program} runs a command string only known at run time")
            elif isinstance(inner, list):
                for part in inner:
                    self.argv(part, None, depth + 1)

    def _shell(self, rest: Sequence[Word], command: Command | None, depth: int) -> None:
        script: Word | None = None
        reads_script_file = False
        from_stdin = False  # -s: commands come from stdin, the remaining words are parameters
        i = 0
        while i < len(rest):
            value = rest[i].value
            if value is None:
                break
            if value == "--":
                reads_script_file = i + 1 < len(rest) and not from_stdin
                break
            if value.startswith("-") and len(value) > 1 and not value.startswith("--"):
                from_stdin = from_stdin or "s" in value[1:]
                if "c" in value[1:]:
                    script = rest[i + 1] if i + 1 < len(rest) else Word("", "")
                    break
                if value[1:] in ("o", "O") and i + 1 < len(rest):
                    i += 2
                    continue
                i += 1
                continue
            if value.startswith("--"):
                i += 1
                continue
            reads_script_file = not from_stdin
            break
        if script is not None:
            if script.value is None:
                self.finding("dynamic-shell-string", "sh -c runs a command string only known at run time")
            else:
                self.line(script.value, depth + 1)
            return
        if reads_script_file:
            return  # `bash script.sh`: like running any program
        if command is not None and command.stdin_text is not None:
            self.line(command.stdin_text, depth + 1)
        elif command is not None and command.stdin_dynamic:
            self.finding("dynamic-shell-string", "a here-document with expansions is fed to a shell")
        elif command is not None and command.piped:
            self.finding("pipe-to-shell", "a shell runs whatever is piped into it")


_DYNAMIC_STRING = object()


def _has_code_arg(words: Sequence[Word]) -> bool:
    for word in words:
        value = word.value or ""
        if value in ("-c", "-e", "-E", "-r", "--eval", "-p", "--print") or not value.startswith("-"):
            return True
    return False


def _skip_options(
    words: Sequence[Word], with_value: frozenset[str], *, long_value: frozenset[str] = frozenset()
) -> int:
    """Index of the first word after a wrapper's own options."""
    i = 0
    while i < len(words):
        value = words[i].value
        if value is None:
            return i
        if value == "--":
            return i + 1
        if value.startswith("--"):
            name = value[2:].partition("=")[0]
            i += 2 if name in long_value and "=" not in value else 1
            continue
        if value.startswith("-") and len(value) > 1:
            letters = value[1:]
            attached = any(letters.startswith(opt) and len(letters) > len(opt) for opt in with_value)
            i += 2 if letters in with_value and not attached else 1
            continue
        return i
    return i


def _unwrap(program: str, rest: list[Word]) -> list[list[Word]] | str | object | None:
    """The command(s) a wrapper runs: word lists, a shell string, _DYNAMIC_STRING, or None."""
    if program in ("sudo", "doas", "run0", "pkexec"):
        start = _skip_options(
            rest,
            frozenset({"u", "g", "p", "C", "D", "r", "t", "U", "T", "h"}),
            long_value=frozenset({"user", "group", "prompt", "close-from", "chdir", "role", "type", "other-user"}),
        )
        return [rest[start:]] if start < len(rest) else None
    if program == "env":
        return _unwrap_env(rest)
    if program in ("nice", "ionice"):
        start = _skip_options(rest, frozenset({"n", "c", "p", "t"}), long_value=frozenset({"adjustment", "class"}))
        return [rest[start:]]
    if program in ("nohup", "builtin", "setsid", "fakeroot", "catchsegv", "unbuffer", "stdbuf", "time", "chronic"):
        start = _skip_options(
            rest,
            frozenset({"i", "o", "e", "f", "l", "s"}),
            long_value=frozenset({"input", "output", "error", "format"}),
        )
        return [rest[start:]]
    if program in ("timeout", "taskset"):
        start = _skip_options(rest, frozenset({"s", "k"}), long_value=frozenset({"signal", "kill-after"}))
        return [rest[start + 1 :]]  # skip the duration / mask
    if program == "command":
        start = _skip_options(rest, frozenset())
        if any((w.value or "") in ("-v", "-V") for w in rest[:start]):
            return None  # command -v only looks the name up
        return [rest[start:]]
    if program == "exec":
        return [rest[_skip_options(rest, frozenset({"a"})) :]] if rest else None
    if program == "busybox":
        return [rest]
    if program == "xargs":
        start = _skip_options(
            rest,
            frozenset({"a", "d", "E", "I", "L", "n", "P", "s"}),
            long_value=frozenset(
                {
                    "arg-file",
                    "delimiter",
                    "eof",
                    "replace",
                    "max-lines",
                    "max-args",
                    "max-procs",
                    "max-chars",
                    "process-slot-var",
                }
            ),
        )
        return [rest[start:]] if start < len(rest) else None
    if program == "flock":
        start = _skip_options(rest, frozenset({"w", "E", "conflict-exit-code"}), long_value=frozenset({"timeout"}))
        tail = rest[start + 1 :]
        if tail and tail[0].value in ("-c", "--command"):
            return _string_or_dynamic(tail[1] if len(tail) > 1 else None)
        return [tail]
    if program == "watch":
        start = _skip_options(rest, frozenset({"n", "d", "q"}), long_value=frozenset({"interval", "differences"}))
        words = rest[start:]
        if any(w.value is None for w in words):
            return _DYNAMIC_STRING
        return " ".join(w.value or "" for w in words)
    if program == "trap" and rest:
        return _string_or_dynamic(rest[0])
    if program in ("find", "fd", "fdfind"):
        return _find_exec(rest)
    if program in ("su", "runuser"):
        for i, word in enumerate(rest):
            if word.value in ("-c", "--command") and i + 1 < len(rest):
                return _string_or_dynamic(rest[i + 1])
            if (word.value or "").startswith("--command="):
                return (word.value or "").partition("=")[2]
        return None
    if program in ("ssh", "parallel"):
        return None
    return None


def _string_or_dynamic(word: Word | None) -> str | object | None:
    if word is None:
        return None
    return word.value if word.value is not None else _DYNAMIC_STRING


def _unwrap_env(rest: list[Word]) -> list[list[Word]] | str | object | None:
    i = 0
    while i < len(rest):
        value = rest[i].value
        if value is None:
            return [rest[i:]]
        if value == "--":
            i += 1
            break
        if value in ("-S", "--split-string") or value.startswith(("-S", "--split-string=")):
            if value in ("-S", "--split-string"):
                following = rest[i + 1 :]
                if any(w.value is None for w in following):
                    return _DYNAMIC_STRING
                return " ".join(w.value or "" for w in following)
            return value[2:] if value.startswith("-S") else value.partition("=")[2]
        if value in ("-u", "-C", "--unset", "--chdir"):
            i += 2
            continue
        if value.startswith("-") and len(value) > 1:
            i += 1
            continue
        if "=" in value and not value.startswith("="):
            i += 1
            continue
        break
    return [rest[i:]] if i < len(rest) else None


def _find_exec(rest: list[Word]) -> list[list[Word]]:
    commands: list[list[Word]] = []
    i = 0
    while i < len(rest):
        if rest[i].value in ("-exec", "-execdir", "-ok", "-okdir", "--exec", "-x", "-X", "--exec-batch"):
            j = i + 1
            while j < len(rest) and rest[j].value not in (";", "+", r"\;"):
                j += 1
            if j > i + 1:
                commands.append(rest[i + 1 : j])
            i = j + 1
        else:
            i += 1
    return commands


class PolicyEngine:
    """Decides command lines (or argv lists) against a ShellPolicy."""

    def __init__(self, policy: ShellPolicy) -> None:
        self.policy = policy
        self._detect = {rule.detect: rule for rule in policy.rules if rule.detect}
        self._program_rules = [rule for rule in policy.rules if rule.programs]

    def expand(self, command: str, args: Sequence[str] = ()) -> _Expander:
        expander = _Expander()
        if args:
            words = [Word(command, command), *(Word(a, a) for a in args)]
            expander.argv(words, None, 0)
        else:
            expander.line(command, 0)
        return expander

    def decide(self, command: str, args: Sequence[str] = ()) -> Verdict:
        expander = self.expand(command, args)
        best: Verdict | None = None
        commands: list[str] = []
        for found in expander.found:
            if found.finding is not None:
                verdict = self._finding(found.finding)
            else:
                assert found.argv is not None
                commands.append(" ".join(a if a != _DYNAMIC else "…" for a in found.argv))
                verdict = self._command(found.argv, found.text)
            if best is None or _SEVERITY[verdict.action] > _SEVERITY[best.action]:
                best = verdict
        if best is None:
            best = Verdict("allow", None, "nothing to run", "")
        return Verdict(
            best.action,
            best.rule,
            best.reason,
            best.trigger,
            tuple(commands),
            tuple(expander.redirects),
            tuple(f.finding for f in expander.found if f.finding is not None),
        )

    def _command(self, argv: list[str], text: str) -> Verdict:
        for rule in self._program_rules:
            if rule_matches(rule, argv):
                return Verdict(rule.action, rule.id, rule.reason, " ".join(argv))
        if self.policy.mode == "allowlist":
            return Verdict(
                "deny",
                "not-in-allowlist",
                f"{posixpath.basename(argv[0])!r} is not allowed by the allow-list policy.",
                " ".join(argv),
            )
        return Verdict("allow", None, "no rule matched", text)

    def _finding(self, finding: Finding) -> Verdict:
        rule = self._detect.get(finding.kind)
        if rule is not None:
            return Verdict(rule.action, rule.id, f"{rule.reason} ({finding.detail})", finding.detail)
        if finding.kind in INFORMATIONAL:
            return Verdict("allow", None, finding.detail, finding.detail)
        return Verdict(
            self.policy.undecidable,
            f"undecidable:{finding.kind}",
            f"Cannot be decided before running: {finding.detail}.",
            finding.detail,
        )
