"""A command's arguments as its program reads them, and whether a policy rule matches the command.

Arguments are split the way the program reads them: long options by any unambiguous prefix, as GNU getopt and git
accept them (``rm --recur --forc``), the options that take a value per program (so the subcommand is found and a
value is not read as a flag), signals of ``kill``. Paths match as the kernel resolves their spelling
(``of=/dev//sda``) and block devices by name and by the kernel's file type (``/dev/disk/by-id/…``).

Owns the matching of one command against one rule; what the commands of a line are (``expander``) and which rule's
decision wins (``rules``) are not here. String matching, advisory like the rest of the policy layer.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import posixpath
import re
import stat
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

from mcp_server_guard.policy import Rule
from mcp_server_guard.shell.strings.option_values import IPROUTE, VALUE_OPTIONS

RUN_TIME_ARG = "\x00dynamic"  # stands for an argument only run time knows; matches no glob
BLOCK_DEVICE = "<block-device>"  # what a path that names a block device also matches as
# Where the system installs its programs. A rule names a program by its name; a program run by a path elsewhere
# (``./cat``, ``bin/cat``, ``$HOME/cat``) is a file of the project's or anyone's that only shares the name.
SYSTEM_BIN_DIRS = frozenset({"/bin", "/usr/bin", "/sbin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"})
SINGLE_DASH_LONG = frozenset({"find", "openssl"}) | IPROUTE
# Paths that name a block device (what the kernel says decides too, for paths that exist here).
BLOCK_DEVICE_NAMES = (
    "/dev/sd*", "/dev/hd*", "/dev/vd*", "/dev/xvd*", "/dev/nvme*", "/dev/mmcblk*", "/dev/disk/**", "/dev/loop*",
    "/dev/md*", "/dev/dm-*", "/dev/mapper/*", "/dev/sr*", "/dev/root", "/dev/mtdblock*", "/dev/zd*", "/dev/zram*",
    "/dev/nbd*", "/dev/rbd*", "/dev/bcache*", "/dev/drbd*", "/dev/ram*", "/dev/block/**", "/dev/ubd*",
    "/dev/mem", "/dev/kmem", "/dev/port", "/dev/fd0", "/dev/vg*/*", "/dev/zvol/**",
)  # fmt: skip
# Long options that exist as written, so never an abbreviation of a longer one (`pip install --pre` is not --prefix).
_EXACT_LONGS: dict[str, frozenset[str]] = {name: frozenset({"pre", "user", "no-deps"}) for name in ("pip", "pip3")}
_SIGNALLERS = frozenset({"kill", "killall", "pkill", "skill", "snice"})


@dataclass
class Args:
    """One command's arguments as its program reads them."""

    shorts: set[str] = field(default_factory=set)  # single letters: -rf is r and f
    longs: set[str] = field(default_factory=set)  # whole names as written: --force, find's -delete
    abbreviable: set[str] = field(default_factory=set)  # --names, which getopt also takes by a unique prefix
    values: dict[str, list[str]] = field(default_factory=dict)
    positionals: list[str] = field(default_factory=list)
    dynamic: bool = False  # some argument is only known at run time
    free: bool = False  # one that is not an option's value: run time may make it a flag or a positional
    # The first positional right after an option this table does not know (``pip --log l.txt install``): it may be
    # that option's value, and the next positional the subcommand.
    first_after_option: bool = False
    arg_forms: list[str] = field(default_factory=list)  # every argument's forms (forms_of), computed once
    target_forms: list[str] = field(default_factory=list)  # every positional's forms

    def has(self, flag: str) -> bool:
        if len(flag) == 1:
            return flag in self.shorts
        return flag in self.longs or any(flag.startswith(name) for name in self.abbreviable)

    def values_of(self, option: str) -> list[str]:
        found = list(self.values.get(option, []))
        if len(option) > 1:
            for name, values in self.values.items():
                if name != option and name in self.abbreviable and option.startswith(name):
                    found += values
        return found


def parse_args(program: str, args: Sequence[str], more_values: frozenset[str] = frozenset()) -> Args:
    """Split arguments into flags (short letters, long names), option values and positionals (``more_values``:
    options that take a value besides those ``VALUE_OPTIONS`` names)."""
    takes_value = _value_table(program) | more_values
    out = Args(dynamic=RUN_TIME_ARG in args)
    subcommand = ""
    single_dash_long = program in SINGLE_DASH_LONG
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            rest = args[i:]
            if program == "kill":  # kill -- -01: a process group's number, as bash reads it
                rest = [str(int(a)) if re.fullmatch(r"\s*[+-]?\d+\s*", a) else a for a in rest]
            out.positionals.extend(rest)
            break
        if (
            program == "kill"
            and re.fullmatch(r"\s*[+-]?\d+\s*", arg)
            and (out.shorts or out.longs or out.values or not arg.strip().startswith("-"))
        ):
            # kill -9 -1: after the signal, -1 is a process (every process); bash reads -01 and ' -1' as -1 too
            out.positionals.append(str(int(arg)))  # (red team 21)
            continue
        if program in _SIGNALLERS and re.fullmatch(r"-(?:SIG)?[A-Z][A-Z0-9+-]+|-\d+", arg) and arg != "-1":
            out.values.setdefault("signal", []).append(arg[1:])  # killall -USR1: a signal, not -U -S -R -1
            continue
        if program == "kill" and arg.startswith("-") and (out.shorts or out.longs or out.values):
            out.positionals.append(arg)  # kill -9 -1: after the signal, -1 is a process (every process)
            continue
        if program in ("find", "fd", "fdfind") and arg in ("-exec", "-execdir", "-ok", "-okdir"):
            out.longs.add(arg[1:])
            end = next((j for j in range(i, len(args)) if args[j] in (";", "+", r"\;")), len(args))
            out.values.setdefault(arg[1:], []).append(posixpath.basename(args[i]) if i < len(args) else "")
            i = end + 1
            continue
        if program == "git" and out.positionals and not subcommand:
            subcommand = out.positionals[0]  # its options that take a value (``clone --branch "$B"``) from here on
            takes_value = takes_value | _GIT_VALUES.get(subcommand, frozenset())
        if arg.startswith("--") and len(arg) > 2:
            name, eq, value = arg[2:].partition("=")
            out.longs.add(name)
            if name not in _EXACT_LONGS.get(program, ()):
                out.abbreviable.add(name)
            if eq:
                out.values.setdefault(name, []).append(value)
            elif _takes_value(name, takes_value) and i < len(args):
                out.values.setdefault(name, []).append(args[i])
                i += 1
            continue
        if arg.startswith("-") and len(arg) > 1 and arg != RUN_TIME_ARG:
            letters = arg[1:]
            out.longs.add(letters)  # single-dash long options: find -delete, java -jar
            if single_dash_long:
                if program == "find" and letters.startswith("newer"):
                    out.longs.add("newer")  # -newermt DATE, -neweraa FILE: a time test like -newer
                if (letters in takes_value or (program == "find" and letters.startswith("newer"))) and i < len(args):
                    out.values.setdefault(letters, []).append(args[i])
                    i += 1
                continue
            for pos, letter in enumerate(letters):
                if program == "git" and letter == "c" and out.positionals and out.positionals[0] != "clone":
                    # After the subcommand, -c is the subcommand's own (switch -c NEW, commit -c COMMIT), not git's
                    # config option (which only comes before it; clone's -c sets the new repository's config).
                    out.longs.add("subcommand-c")
                    continue
                out.shorts.add(letter)
                if letter in takes_value:
                    value = letters[pos + 1 :]
                    if not value and i < len(args):
                        value = args[i]
                        i += 1
                    out.values.setdefault(letter, []).append(value)
                    break
            continue
        if not out.positionals and i >= 2 and _may_take_value(args[i - 2], program):
            out.first_after_option = True
        out.positionals.append(arg)
    # ``git clone --branch "$B"``: a run-time value of an option that takes one is that option's value, nothing
    # more (issue 45); one anywhere else may be any flag.
    out.free = out.dynamic and RUN_TIME_ARG in out.positionals
    out.arg_forms = [form for arg in args for form in forms_of(arg)]
    out.target_forms = [form for arg in out.positionals for form in forms_of(arg)]
    return out


# Options of git's subcommands that take a value (a branch, a depth, a remote's name, a directory): what follows them
# is their value, not a flag or a positional.
_GIT_VALUES: dict[str, frozenset[str]] = {
    "clone": frozenset({"b", "branch", "o", "origin", "depth", "shallow-since", "shallow-exclude", "reference",
                        "reference-if-able", "separate-git-dir", "template", "filter", "j", "jobs", "bundle-uri",
                        "server-option", "revision"}),
    "fetch": frozenset({"depth", "deepen", "shallow-since", "shallow-exclude", "j", "jobs", "filter", "negotiation-tip",
                        "server-option", "refmap"}),
    "pull": frozenset({"depth", "deepen", "shallow-since", "shallow-exclude", "j", "jobs", "s", "strategy", "X",
                       "strategy-option"}),
    "checkout": frozenset({"b", "B", "orphan"}),
    "switch": frozenset({"orphan"}),
    "branch": frozenset({"set-upstream-to", "u"}),
}  # fmt: skip


# Options of many programs that take no value: the word after them is no value of theirs.
_NO_VALUE = frozenset(
    {
        "json",
        "no-pager",
        "verbose",
        "quiet",
        "yes",
        "global",
        "help",
        "version",
        "no-color",
        "offline",
        "dry-run",
        "force",
        "all",
        "debug",
        "silent",
        "v",
        "q",
        "y",
        "g",
        "h",
        "V",
        "f",
    }
)


def _value_table(program: str) -> frozenset[str]:
    """``VALUE_OPTIONS`` of ``program`` (``pip3``, ``pip3.12`` are pip); empty when it has none."""
    return VALUE_OPTIONS.get("pip" if re.fullmatch(r"pip(3(\.\d+)?)?", program) else program, frozenset())


def _may_take_value(word: str, program: str) -> bool:
    """Whether ``word`` is an option whose value, for all this table knows, is the word after it: a long one without
    ``=`` or a short one, of a program with no table of its own (``VALUE_OPTIONS`` lists those of the others)."""
    if _value_table(program) or word in ("-", "--") or not word.startswith("-") or word == RUN_TIME_ARG:
        return False
    name = word.lstrip("-")
    return "=" not in name and name not in _NO_VALUE and not (word[1] != "-" and len(name) > 1)


def _takes_value(name: str, takes_value: frozenset[str]) -> bool:
    if name in takes_value:
        return True
    candidates = [option for option in takes_value if len(option) > 1 and option.startswith(name)]
    return len(candidates) == 1  # an unambiguous abbreviation of an option that takes a value


def normalize_path(value: str) -> str:
    """A path as the kernel resolves its spelling: // and /./ collapse, a/.. goes, ~/ stays ~."""
    if value in ("", RUN_TIME_ARG) or ("/" not in value and value not in (".", "..", "~")):
        return value
    home = value == "~" or value.startswith("~/")
    body = value[1:] if home else value
    if not body:
        return "~"
    normal = posixpath.normpath(body)
    if normal.startswith("//"):
        normal = "/" + normal.lstrip("/")
    if home:
        return "~" if normal in ("/", ".") else "~" + (normal if normal.startswith("/") else "/" + normal)
    return normal


@functools.lru_cache(maxsize=1024)
def is_block_device(path: str) -> bool:
    """Does ``path`` (normalized) name a block device or kernel memory: by name, or by its file type here?"""
    if not path.startswith("/dev/"):
        return False
    if any(path_matches(path, pattern) for pattern in BLOCK_DEVICE_NAMES):
        return True
    try:
        return stat.S_ISBLK(os.stat(path).st_mode)
    except FileNotFoundError:
        # A device this machine does not have (`of=/dev/usb_drive`): anything but the everyday character devices
        # is taken for a disk.
        return not any(path_matches(path, pattern) for pattern in _CHARACTER_DEVICES)
    except (OSError, ValueError):
        return False


_CHARACTER_DEVICES = (
    "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty*", "/dev/pts/**", "/dev/ptmx",
    "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/fd/**", "/dev/shm/**", "/dev/console", "/dev/log",  # noqa: S108
    "/dev/mqueue/**", "/dev/hugepages/**", "/dev/kvm", "/dev/net/tun", "/dev/fuse", "/dev/snd/**", "/dev/dri/**",
    "/dev/video*", "/dev/input/**", "/dev/serial/**", "/dev/usb/**", "/dev/bus/**", "/dev/cpu/**", "/dev/rtc*",
)  # fmt: skip


def forms_of(arg: str) -> list[str]:
    """What an argument matches as: itself, its normalized path, and <block-device> for a disk."""
    forms = [arg]
    prefix, path = "", arg
    found = re.match(r"-{0,2}[A-Za-z_][\w-]*=", arg)
    if found and "/" in arg[found.end() :]:
        prefix, path = found.group(), arg[found.end() :]
    if "/" in path or path in ("~", ".", ".."):
        normal = normalize_path(path)
        if normal != path:
            forms.append(prefix + normal)
        if is_block_device(normal):
            forms.append(prefix + BLOCK_DEVICE)
        # A container's volume or mount spec names a host path in a part of its own (`-v /.:/h`, `--mount
        # type=bind,source=//etc,target=/h`: red team 20 F13): that part as the path it is, and a last one ended.
        parts = re.split(r"([:,])", path)
        if len(parts) > 1:
            spec = "".join(_spec_part(part) for part in parts)
            for form in (spec, spec + ","):
                if form != path:
                    forms.append(prefix + form)
    return forms


def _spec_part(part: str) -> str:
    """One part of a ``SRC:DST`` or ``k=v,k=v`` spec, its path normalized."""
    key, eq, value = part.rpartition("=")
    if value.startswith(("/", "~", "./", "../")) and value not in ("/", "~"):
        return key + eq + normalize_path(value)
    return part


@functools.lru_cache(maxsize=512)
def _path_pattern(pattern: str) -> re.Pattern[str]:
    """A path glob: * and ? stay within one component, ** spans components, [..] is a class, \\x literal."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*" and pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif ch == "*":
            out.append("[^/]*")
            i += 1
        elif ch == "?":
            out.append("[^/]")
            i += 1
        elif ch == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1 : end]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body).replace("\\", "\\\\") + "]")
            i = end + 1
        elif ch == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(ch))
            i += 1
    return re.compile("".join(out), re.DOTALL)


def path_matches(value: str, pattern: str) -> bool:
    """Does ``value`` match the path glob ``pattern`` (``*`` within one component, ``**`` across them)?"""
    return _path_pattern(pattern).fullmatch(value) is not None


def glob_matches(value: str, patterns: Sequence[str], *, fold: bool = False) -> bool:
    """Does ``value`` match any of the shell globs ``patterns`` (``fold``: ignoring case)?"""
    if fold:
        value = value.lower()
    return any(_glob_match(value, p.lower() if fold else p) for p in patterns)


def _glob_match(value: str, pattern: str) -> bool:
    """``fnmatch.fnmatchcase``, without compiling a pattern that has none of its special characters (``*``, ``?``,
    ``[``): such a pattern matches only itself. Most of the policy's program globs are names: the first line judged
    compiled every one of them (issue 44)."""
    if "*" in pattern or "?" in pattern or "[" in pattern:
        return fnmatch.fnmatchcase(value, pattern)
    return value == pattern


def system_program(program: str) -> bool:
    """Whether ``program`` (a command's first word, as the expander found it) is the system's: looked up on PATH (no
    slash) or a path in one of ``SYSTEM_BIN_DIRS`` (``/usr/bin/../../tmp/cat`` is ``/tmp/cat``)."""
    if "/" not in program:
        return program != RUN_TIME_ARG
    if not program.startswith("/"):
        return False  # relative: ``bin/cat`` is the project's, not /bin's
    return "/" + posixpath.normpath(program).lstrip("/").rpartition("/")[0] in SYSTEM_BIN_DIRS


@functools.lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def rule_matches(rule: Rule, argv: Sequence[str], parsed: Args | None = None, *, wildcard: bool = False) -> bool:
    """Does ``rule`` match one effective command (argv[0] is the program's path or name)?

    With ``wildcard``, an argument only run time knows is taken to be whatever would make the rule match:
    the question is then whether the command *could* match."""
    program = posixpath.basename(argv[0])
    if not glob_matches(program, rule.programs):
        return False
    args = list(argv[1:])
    if parsed is None:
        parsed = parse_args(program, args)
    free = wildcard and parsed.free
    if rule.subcommands:
        first = parsed.positionals[0] if parsed.positionals else None
        matched = first in rule.subcommands or (free and (first is None or first == RUN_TIME_ARG))
        if parsed.first_after_option:
            # `pip --log l.txt install --user x`: the first operand may be an unknown option's value. A rule that
            # asks or denies takes either reading; one that allows, neither (red team 20 F2).
            second = parsed.positionals[1] if len(parsed.positionals) > 1 else None
            matched = (matched or second in rule.subcommands) if rule.action != "allow" else False
        if not matched:
            return False
    if not free and any(not any(parsed.has(flag) for flag in group) for group in rule.flags):
        return False
    if any(parsed.has(flag) for flag in rule.without):
        return False
    if len(parsed.positionals) < rule.min_positionals and not free:
        return False
    if rule.verb_prefixes and not (free or _verb_abbreviates(parsed.positionals, rule.verb_prefixes)):
        return False
    if rule.args and not (free or any(glob_matches(form, rule.args) for form in parsed.arg_forms)):
        return False
    if rule.args_regex and not (
        free or any(_regex(p).search(a) for a in args if a != RUN_TIME_ARG for p in rule.args_regex)
    ):
        return False
    if rule.targets and not (
        free or any(path_matches(form, pattern) for form in parsed.target_forms for pattern in rule.targets)
    ):
        return False
    return (
        not rule.option_values
        or (free and any(parsed.has(option) for option in rule.option_values))
        or (wildcard and any(RUN_TIME_ARG in parsed.values_of(option) for option in rule.option_values))
        or any(
            _option_value_matches(form, patterns)
            for option, patterns in rule.option_values.items()
            for value in parsed.values_of(option)
            for form in forms_of(value)
        )
    )


# Names (and, for -f, command lines) of processes every machine runs: a kill pattern that matches most of them is
# one that matches every process (red team 20 F12: `pkill '[a-z]'`, `pkill -f '(.*)'`).
_PROCESS_NAMES = (
    "systemd",
    "init",
    "bash",
    "sh",
    "zsh",
    "sshd",
    "python3",
    "node",
    "code",
    "Xorg",
    "dbus-daemon",
    "cron",
    "containerd",
    "dockerd",
    "java",
    "tmux",
    "ollama",
    "agetty",
    "rsyslogd",
    "polkitd",
)
_POSIX_CLASSES = {
    "[:alpha:]": "a-zA-Z",
    "[:alnum:]": "a-zA-Z0-9",
    "[:lower:]": "a-z",
    "[:upper:]": "A-Z",
    "[:digit:]": "0-9",
    "[:xdigit:]": "0-9a-fA-F",
    "[:space:]": "\\s",
    "[:blank:]": " \\t",
    "[:punct:]": "!-/:-@\\[-`{-~",
    "[:print:]": " -~",
    "[:graph:]": "!-~",
    "[:cntrl:]": "\\x00-\\x1f",
    "[:word:]": "\\w",
}
_COMMAND_LINES = ("/sbin/init splash", "/usr/bin/python3 -m http.server", "node /home/u/app/server.js", "-bash",
                  "/usr/sbin/sshd -D", "/usr/lib/systemd/systemd --user", "/usr/bin/dbus-daemon --system",
                  "/sbin/agetty -o -p -- \\u --noclear tty1 linux", "/usr/local/bin/ollama serve", "/bin/bash",
                  "/usr/lib/xorg/Xorg :0", "/usr/bin/containerd")  # fmt: skip
# pkill's selections that, with no pattern, take nearly every process: a run state, an age, a process group, a session.
_SELECTIONS = ("r", "runstates", "O", "older", "g", "pgroup", "s", "session")


def kills_everything(program: str, argv: Sequence[str]) -> bool:
    """Whether ``pkill``/``killall -r`` is given a pattern that matches nearly every process (Python's regular
    expressions standing in for the program's)."""
    if program not in ("pkill", "killall"):
        return False
    parsed = parse_args(program, list(argv[1:]))
    if program == "killall" and not (parsed.has("r") or parsed.has("regexp")):
        return False
    if program == "pkill" and not parsed.positionals and any(parsed.values_of(o) or parsed.has(o) for o in _SELECTIONS):
        return True  # `pkill -r S`, `pkill -O 1`, `pkill -g 0` (red team 21)
    whole = parsed.has("x") or parsed.has("exact") or (program == "killall")
    sample = _COMMAND_LINES if parsed.has("f") or parsed.has("full") else _PROCESS_NAMES
    for given in parsed.positionals:
        if given == RUN_TIME_ARG:
            continue
        pattern = given
        for name, letters in _POSIX_CLASSES.items():  # (Python's re has no POSIX classes)
            pattern = pattern.replace(name, letters)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                compiled = re.compile(pattern, re.IGNORECASE if parsed.has("i") or parsed.has("ignore-case") else 0)
        except (re.error, RecursionError, OverflowError):
            continue
        matched = sum(1 for name in sample if (compiled.fullmatch(name) if whole else compiled.search(name)))
        if matched * 4 >= len(sample) * 3:
            return True
    return False


def _verb_abbreviates(positionals: Sequence[str], verbs: Sequence[str]) -> bool:
    """Whether the second operand abbreviates one of ``verbs``, as iproute2's ``matches`` reads a command (``ip l d``
    deletes a link, ``ip a a`` adds an address): a prefix of the verb, at least as long as the part before its
    ``|`` (``se|t``: ``se`` or ``set``)."""
    if len(positionals) < 2 or not positionals[1]:
        return False
    word = positionals[1]
    for verb in verbs:
        shortest, _bar, rest = verb.partition("|")
        if word.startswith(shortest) and (shortest + rest).startswith(word):
            return True
    return False


def _option_value_matches(form: str, patterns: Sequence[str]) -> bool:
    """A value matches an option's globs unless a ``!`` glob excludes it (``core.hookspath=*`` but not
    ``!core.hookspath=/dev/null``: hooks turned off)."""
    wanted = [p for p in patterns if not p.startswith("!")]
    excluded = [p[1:] for p in patterns if p.startswith("!")]
    return glob_matches(form, wanted, fold=True) and not (excluded and glob_matches(form, excluded, fold=True))
