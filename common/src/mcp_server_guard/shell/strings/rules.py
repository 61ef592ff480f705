"""The shell policy engine: deny/ask/allow rules over every command a line would run.

A command line is parsed (``parsing``), every simple command is looked through its wrappers (``sudo``, ``env``,
``xargs``, ``find -exec``, ``sh -c '…'``, ``uv run`` …) to the commands that would really run (``expander``), and
each command found is matched against every rule (``matching``); the strictest match decides for that command
(deny > ask > allow), and the line takes the strictest decision of all. In allow-list mode a command no allow rule
names is denied, and deny and ask rules still apply to those an allow rule names. What cannot be decided
statically is a *finding* (``eval``, ``$cmd``, ``curl … | sh``, code in data, parse errors …) decided by a
``detect`` rule, or ``undecidable`` (ask or deny, never allow) when no rule names it; so is an argument
only run time knows where it could make a deny or ask rule match (``rm $(echo -rf) ~``).

Here: the ``Verdict`` and the ``PolicyEngine`` that weighs each command and finding into it, and what lies outside
the project (where the rules that only guard the project's files hold even on a copy). How arguments are read and
matched is ``matching``; what a line runs, reads and writes is ``expander`` (with ``feeds``, ``runners``,
``writes``).

String policies are advisory: a program can always do what ``rm`` does. The kernel is the boundary.
"""

from __future__ import annotations

import dataclasses
import os
import posixpath
import re
import shlex
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from mcp_server_guard.paths import within_any
from mcp_server_guard.policy import INFORMATIONAL, Action, PolicyError, Rule, ShellPolicy
from mcp_server_guard.shell.strings.commands import Finding, Redirect, Word
from mcp_server_guard.shell.strings.expander import Expander
from mcp_server_guard.shell.strings.feeds import NO_FEED, Feed
from mcp_server_guard.shell.strings.matching import (
    RUN_TIME_ARG,
    Args,
    glob_matches,
    normalize_path,
    parse_args,
    rule_matches,
    system_program,
)
from mcp_server_guard.shell.strings.outside import boxed_private, cache_of_home
from mcp_server_guard.shell.strings.parsing import analysis_budget
from mcp_server_guard.shell.strings.reading import reads_only
from mcp_server_guard.shell.strings.walker import CODE_IN_VALUE

_SEVERITY: dict[str, int] = {"allow": 0, "ask": 1, "deny": 2}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # a name an assignment in a line can spell
# Threat: names bash sets itself at start (``BASH``, ``PPID``, ``PWD`` …) or keeps read-only: a field value for them
# is not what the line sees (`env: {"BASH": "echo"}` with `$BASH -c '…'` runs bash), so they are never taken as the
# line's values (`$BASH` stays a word known only at run time).
_SET_BY_BASH = frozenset({
    "BASH", "BASHOPTS", "BASHPID", "BASH_ALIASES", "BASH_ARGC", "BASH_ARGV", "BASH_ARGV0", "BASH_CMDS",
    "BASH_COMMAND", "BASH_EXECUTION_STRING", "BASH_LINENO", "BASH_SOURCE", "BASH_SUBSHELL", "BASH_VERSINFO",
    "BASH_VERSION", "COMP_WORDBREAKS", "DIRSTACK", "EPOCHREALTIME", "EPOCHSECONDS", "EUID", "FUNCNAME", "GROUPS",
    "HISTCMD", "HOSTNAME", "HOSTTYPE", "IFS", "LINENO", "MACHTYPE", "OLDPWD", "OPTERR", "OPTIND", "OSTYPE",
    "PIPESTATUS", "PPID", "PWD", "RANDOM", "SECONDS", "SHELLOPTS", "SHLVL", "SRANDOM", "UID", "_",
})  # fmt: skip
_EXPORTED_MAX = 4096  # a longer field value is judged by its name and content only (`$X` then known at run time)


def _exported_as_is(name: str, value: str) -> bool:
    """Whether the line sees ``name`` with the env field's value (so the judgement may take it as that value)."""
    return bool(_NAME.fullmatch(name)) and name not in _SET_BY_BASH and len(value) <= _EXPORTED_MAX


# Doubts that are only about which of the project's files a command writes: judged by their effects while
# commands work on a copy (the box keeps every other place read-only).
# On a copy, what they run or load runs in the box: `PYTHONPATH=src python -m pytest`, an arithmetic value read
# from a file (`line=$(grep -n …); sed -n "$((line+40))p"`).
# On a copy these are judged by what the command did (issue 45: a line the parser cannot read, valid bash or not,
# runs on the copy: the rules still see every part it could read).
EFFECT_FINDINGS = frozenset(
    {
        "dynamic-redirect",
        "search-path",
        "code-in-data",
        "dynamic-program",
        "dynamic-eval",
        "parse-error",
        "code-built-command",
        "pipe-to-shell",  # (code another command prints, not fetched: as `bash script.sh` runs in the box)
    }
)
_DIRECTORY_OPTIONS = ("C", "work-tree", "git-dir", "directory")


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
    asking: tuple[str, ...] = ()  # every rule that asks about some command of the line (the verdict names one)
    # What reads the call's (or the job's) standard input as program text: "" (nothing: stdin is data), "shell",
    # an interpreter's name, or "opaque:<program>" (code this layer cannot read). A job's later stdin is judged so.
    stdin_code: str = ""
    # Only reads (see ``reading``): where commands work on a copy, it runs on a read-only view instead.
    reads_only: bool = False


def _not_bytes(text: str) -> bool:
    """Whether ``text`` holds a character that no byte string decodes to (surrogates other than the
    ``surrogateescape`` ones, which stand for undecodable bytes)."""
    try:
        text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return True
    return False


class PolicyEngine:
    """Decides command lines (or argv lists) against a ShellPolicy."""

    def __init__(
        self,
        policy: ShellPolicy,
        base_path: str | None = None,
        *,
        effects: bool = False,
        roots: Sequence[str] | None = None,
        home: str | None = None,
    ) -> None:
        """``effects``: commands work on a copy whose changes are judged afterwards, so the rules marked
        ``undoable`` (they only guard the project's files) do not apply beforehand to what lies in the project:
        the ``roots`` (default: the current directory); ``home`` is what ``~`` names (default: $HOME)."""
        self.policy = policy
        self.effects = effects
        self.roots = tuple(roots) if roots is not None else (os.getcwd(),)
        self.home = home if home is not None else os.environ.get("HOME", "")
        self.base_path = base_path if base_path is not None else os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")
        self._detect: dict[str, Rule] = {}
        for rule in policy.rules:
            if rule.detect:
                current = self._detect.get(rule.detect)
                if current is None or _SEVERITY[rule.action] > _SEVERITY[current.action]:
                    self._detect[rule.detect] = rule
        self._program_rules = [rule for rule in policy.rules if rule.programs]
        self._by_program: dict[str, list[Rule]] = {}
        plain = [name for rule in policy.rules for name in rule.programs if not any(c in name for c in "*?[")]
        self._named = frozenset(plain)
        self._denied = frozenset(
            name
            for rule in policy.rules
            if rule.action == "deny"
            for name in rule.programs
            if not any(c in name for c in "*?[")
        )

    def expand(
        self,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        stdin: Feed = NO_FEED,
    ) -> Expander:
        expander = Expander(env or {}, self.base_path, self._named)
        expander.known_runs = self._denied
        expander.reaches_outside = lambda args: self._reaches_outside(parse_args("", args))
        expander.home_path = self.home
        expander.roots = tuple(self.roots)
        expander.cwd = self.roots[0] if self.roots else ""
        expander.strict_names = self.policy.mode == "allowlist"
        if env and not args:
            # The call's env field is judged as the same values exported before the line: every rule for an
            # assignment holds (a command-valued name's value judged as a command line, a name that loads code
            # undecidable, a value holding a command substitution code bash may evaluate), and `$X` in the line
            # expands to the value the field gives it (`env: {"X": "rm -rf ~"}` with `$X` is `rm -rf ~`).
            names = [name for name in env if _exported_as_is(name, env[name])]
            if names:
                exported = " ".join(f"{name}={shlex.quote(env[name])}" for name in names)
                command = f"export {exported}\n{command}"
            env = {name: value for name, value in env.items() if name not in names}
        if env:
            # Names no assignment in a line can spell (or an argv, which no shell expands): their own rules.
            expander.assignments([(name, Word(value, value)) for name, value in env.items()], 0)
            for name, value in env.items():
                if CODE_IN_VALUE.search(value):
                    expander.finding("code-in-data", f"the value of {name} holds a command substitution bash may "
                                     "evaluate")  # fmt: skip
        if args:
            words = [Word(command, command), *(Word(a, a) for a in args)]
            expander.argv(words, None, 0, feed=stdin)
        else:
            expander.line(command, 0, stdin)
        return expander

    def plain_commands(
        self, command: str, args: Sequence[str] = (), env: Mapping[str, str] | None = None
    ) -> list[list[str]] | None:
        """Every command the line would run (wrappers looked through), as static words; None when any word or
        program is only known at run time, or the line has any finding."""
        found = self.expand(command, args, env).found
        if any(f.finding is not None or f.argv is None or RUN_TIME_ARG in f.argv for f in found):
            return None
        return [list(f.argv) for f in found if f.argv is not None]

    def decide(
        self,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
        *,
        job: bool = False,
    ) -> Verdict:
        """The verdict on a line (or an argv, with ``args``). ``stdin``: the text the call feeds it, judged as code
        where a program reads its program text from stdin; ``job``: the line runs as a background job whose
        stdin later calls write (``Verdict.stdin_code`` says whether each write must be judged)."""
        if any(_not_bytes(text) for text in (command, *args, stdin or "", *(env or {}).values())):
            # Threat: text no byte string spells (a lone surrogate such as "\ud800", which a JSON escape can carry)
            # cannot reach bash as it is judged; it is refused rather than judged as something else.
            detail = "a character no byte string spells (a lone surrogate)"
            return Verdict("deny", "invalid-text", f"The command holds {detail}.", detail)
        if stdin is not None:
            stdin = stdin.replace("\x00", "")  # bash and dash drop NUL bytes from a script: `shut\0down` is shutdown
        feed = Feed("job", stdin) if job else Feed("call", stdin) if stdin is not None else NO_FEED
        with analysis_budget():
            expander = self.expand(command, args, env, feed)
        best: Verdict | None = None
        commands: list[str] = []
        asking: dict[str, None] = {}
        for found in expander.found:
            if found.finding is not None:
                verdict = self._finding(found.finding)
            else:
                assert found.argv is not None
                commands.append(" ".join(a if a != RUN_TIME_ARG else "…" for a in found.argv))
                verdict = self._command(found.argv, found.text, found.moved)
            if verdict.action == "ask":
                asking.update(dict.fromkeys(verdict.asking or (str(verdict.rule),)))
            if best is None or _SEVERITY[verdict.action] > _SEVERITY[best.action]:
                best = verdict
        if best is None:
            best = Verdict("allow", None, "nothing to run", "")
        findings = len(expander.found) - len(commands)
        argvs = [found.argv for found in expander.found]
        reading = not job and not expander.stdin_code and reads_only(argvs, expander.redirects, findings)
        return Verdict(
            best.action,
            best.rule,
            best.reason,
            best.trigger,
            tuple(commands),
            tuple(expander.redirects),
            tuple(f.finding for f in expander.found if f.finding is not None),
            tuple(asking),
            expander.stdin_code,
            reading,
        )

    def _command(self, argv: list[str], text: str, moved: bool = False) -> Verdict:
        program = posixpath.basename(argv[0])
        parsed = parse_args(program, argv[1:])
        shown = " ".join(a if a != RUN_TIME_ARG else "…" for a in argv)
        best: Verdict | None = None
        allowed = False
        asking: list[str] = []
        outside: bool | None = None
        for rule in self._rules_for(program):
            if self.effects and rule.undoable:
                # On a copy, what it does inside the project is judged by its effects; outside (/, ~, /etc …) no
                # copy catches it: there the rule holds as written.
                if outside is None:
                    outside = self._reaches_outside(parsed, moved)
                if not outside:
                    continue
            if rule.outside:
                if outside is None:
                    outside = self._reaches_outside(parsed, moved)
                if not outside:
                    continue
            if rule_matches(rule, argv, parsed):
                verdict = Verdict(rule.action, rule.id, rule.reason, shown)
                # Threat (red team 19 F9): an allow-list's ``cat`` let ``./cat`` — any file of the project named
                # so — run unboxed in a read-only session. Its allow rules hold only for the system's programs.
                allowed = allowed or (rule.action == "allow" and system_program(argv[0]))
            elif (
                rule.action != "allow"
                and parsed.dynamic
                and not (self.effects and rule.boxed)  # on a copy, in the box: judged by what it does
                and rule_matches(rule, argv, parsed, wildcard=True)
            ):
                # Threat: `rm $(echo -rf) ~`, `F=-rf; rm $F ~` with F unknown: an argument only run time knows
                # could make this rule match. Undecidable: asked (or denied), never allowed.
                verdict = Verdict(
                    self.policy.undecidable,
                    f"undecidable:{rule.id}",
                    f"An argument only known at run time could make rule '{rule.id}' apply: {rule.reason}",
                    shown,
                )
            else:
                continue
            if verdict.action == "ask":
                asking.append(str(verdict.rule))
            if best is None or _SEVERITY[verdict.action] > _SEVERITY[best.action]:
                best = verdict
        if best is not None and best.action == "ask":
            best = dataclasses.replace(best, asking=tuple(asking))
        # Setting variables runs nothing by itself (what a value makes run is judged as its own finding): an allow-list
        # need not name ``export`` for a call's env field (judged as values exported before the line) to pass.
        if self.policy.mode == "allowlist" and not allowed and not (program == "export" and best is None):
            if best is not None and best.action == "deny":
                return best
            if best is not None and not system_program(argv[0]):
                return Verdict(
                    "deny",
                    "not-in-allowlist",
                    f"{argv[0]!r} is not the system's {program}: the allow-list names the programs the system "
                    "installs (run by name, or from /usr/bin and the like), not files that share their names.",
                    shown,
                )
            return Verdict(
                "deny",
                "not-in-allowlist",
                f"{program!r} (used this way) is not allowed by the allow-list policy.",
                shown,
            )
        return best if best is not None else Verdict("allow", None, "no rule matched", text)

    def _rules_for(self, program: str) -> list[Rule]:
        """The rules whose program globs match ``program``, in policy order (looked up once per name)."""
        found = self._by_program.get(program)
        if found is None:
            if len(self._by_program) > 4096:
                self._by_program.clear()
            found = self._by_program[program] = [r for r in self._program_rules if glob_matches(program, r.programs)]
        return found

    def _reaches_outside(self, parsed: Args, moved: bool = False) -> bool:
        """Does a static operand (or a directory option: git -C, --work-tree) name a place outside the project (the
        roots), other than the box's own /tmp and the user's caches? ``moved``: the line changed directory to a
        place outside first (`cd ~ && rm -rf *`), so relative operands are there too."""
        where = [v for option in _DIRECTORY_OPTIONS for v in parsed.values_of(option)]
        for arg in [*parsed.positionals, *where]:
            if arg == RUN_TIME_ARG:
                continue
            path = normalize_path(arg.partition("=")[2] if re.match(r"-{0,2}[A-Za-z_][\w-]*=", arg) else arg)
            if path == "~" or path.startswith("~/"):
                if not self.home:
                    return True
                path = self.home + path[1:]
            if path == ".." or path.startswith(("../", "~-", "~+/..")):
                return True  # ~- is the previous directory: anywhere
            if path.startswith("~") and not path.startswith("~+"):
                return True  # ~root, ~user/x: another user's home (red team 12 F14)
            if moved and not path.startswith("/"):
                return True
            if (
                path.startswith("/")
                and not boxed_private(path, self.home)
                and not within_any(path, self.roots)
                and not cache_of_home(path, self.home)
            ):
                return True
        return False

    def _finding(self, finding: Finding) -> Verdict:
        rule = self._detect.get(finding.kind)
        # (a write outside the allowed directories, in the box: those are read-only there, the call's /tmp aside)
        boxed = self.effects and finding.kind == "write-outside"
        if rule is not None and not (self.effects and rule.undoable) and not boxed:
            return Verdict(rule.action, rule.id, f"{rule.reason} ({finding.detail})", finding.detail)
        if self.effects and finding.kind in EFFECT_FINDINGS:
            # Where a redirect writes is known only at run time; what it wrote is judged afterwards.
            return Verdict("allow", None, f"{finding.detail}: judged by its effects", finding.detail)
        if finding.kind in INFORMATIONAL:
            return Verdict("allow", None, finding.detail, finding.detail)
        return Verdict(
            self.policy.undecidable,
            f"undecidable:{finding.kind}",
            f"Cannot be decided before running: {finding.detail}.",
            finding.detail,
        )


EXAMPLE_ROOT = "/home/user/project"  # where a rule's examples run
EXAMPLE_HOME = "/home/user"


def example_misses(rule: Rule, policy: ShellPolicy) -> list[str]:
    """The examples of ``rule`` it does not decide (alone, with the plain rules: no copy), and the not_examples it
    does, each as a sentence."""
    alone = PolicyEngine(
        policy.model_copy(update={"rules": (rule,), "mode": "denylist"}),
        "/usr/local/bin:/usr/bin:/bin",
        roots=(EXAMPLE_ROOT,),
        home=EXAMPLE_HOME,
    )
    misses = [f"rule {rule.id!r} does not match its example {line!r}" for line in rule.examples
              if alone.decide(line).rule != rule.id]  # fmt: skip
    misses += [f"rule {rule.id!r} matches {line!r}, given as not an example" for line in rule.not_examples
               if alone.decide(line).rule == rule.id]  # fmt: skip
    return misses


def check_examples(policy: ShellPolicy, ids: Collection[str] | None = None) -> None:
    """Raise PolicyError when a rule (of ``ids``; None: every rule) does not match an example of its own, or
    matches a line given as not one (a rule whose meaning drifted from what it says it matches)."""
    misses = [miss for rule in policy.rules if ids is None or rule.id in ids for miss in example_misses(rule, policy)]
    if misses:
        more = f" (and {len(misses) - 1} more)" if len(misses) > 1 else ""
        raise PolicyError(f"the policy's rules do not match their examples: {misses[0]}{more}")
