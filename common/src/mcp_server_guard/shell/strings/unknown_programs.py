"""A program no table here knows: the command lines its options and operands may hand a shell.

Threat: a code option nobody listed (`lua -e 'os.execute("…")'`, `guile -c '(system "…")'`, `dc -e '!…'`), an
option whose name says it runs a command (`--password-command=…`, `-o ssh_command=…`), a ``!cmd`` in a value.
``run_texts`` returns those command lines for judging when ``rules`` looks through an unknown program (or an
interpreter ``interpreters`` does not know). ``DATA_PROGRAMS`` are the programs never looked through so: their
operands are data (names, paths, patterns, packages), not a command they run. The programs whose own run options
are known are ``run_options``'.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mcp_server_guard.patterns import deferred
from mcp_server_guard.shell.strings.code_texts import literal_commands
from mcp_server_guard.shell.strings.option_values import IPROUTE, IPROUTE_VALUES
from mcp_server_guard.shell.strings.parsing import Word
from mcp_server_guard.shell.strings.wrappers import DYNAMIC, Inner, all_values

# Programs whose operands are data — names, paths, patterns, packages — never a command they run: a shell's or a
# program's name among them (`which bash`, `ls -l /bin/sh`, `pip install sh`) is not looked through.
DATA_PROGRAMS = frozenset(
    [
        "echo",
        "printf",
        "cat",
        "tac",
        "head",
        "tail",
        "less",
        "more",
        "most",
        "bat",
        "nl",
        "wc",
        "sort",
        "uniq",
        "cut",
        "paste",
        "join",
        "tr",
        "fold",
        "fmt",
        "column",
        "rev",
        "od",
        "xxd",
        "hexdump",
        "strings",
        "file",
        "stat",
        "ls",
        "dir",
        "vdir",
        "tree",
        "du",
        "df",
        "find",
        "fd",
        "locate",
        "mlocate",
        "plocate",
        "which",
        "whereis",
        "whatis",
        "apropos",
        "type",
        "hash",
        "help",
        "man",
        "info",
        "tldr",
        "readlink",
        "realpath",
        "basename",
        "dirname",
        "test",
        "[",
        "[[",
        "true",
        "false",
        "grep",
        "egrep",
        "fgrep",
        "zgrep",
        "rg",
        "ag",
        "ack",
        "diff",
        "cmp",
        "comm",
        "sdiff",
        "md5sum",
        "sha1sum",
        "sha224sum",
        "sha256sum",
        "sha384sum",
        "sha512sum",
        "b2sum",
        "cksum",
        "sum",
        "ldd",
        "objdump",
        "readelf",
        "nm",
        "size",
        "cp",
        "mv",
        "ln",
        "install",
        "touch",
        "mkdir",
        "rmdir",
        "rm",
        "chmod",
        "chown",
        "chgrp",
        "tar",
        "zip",
        "unzip",
        "gzip",
        "gunzip",
        "zcat",
        "bzip2",
        "xz",
        "unxz",
        "zstd",
        "7z",
        "git",
        "svn",
        "dpkg",
        "dpkg-query",
        "apt-file",
        "apt-cache",
        "rpm",
        "pip",
        "pip3",
        "pipx",
        "uv",
        "npm",
        "npx",
        "yarn",
        "pnpm",
        "bun",
        "cargo",
        "go",
        "gem",
        "bundle",
        "composer",
        "poetry",
        "pdm",
        "hatch",
        "pipenv",
        "conda",
        "mamba",
        "micromamba",
        "brew",
        "snap",
        "flatpak",
        "apt",
        "apt-get",
        "dnf",
        "yum",
        "pacman",
        "zypper",
        "apk",
        "nix-env",
        "pyenv",
        "rbenv",
        "nodenv",
        "asdf",
        "mise",
        "nvm",
        "fnm",
        "volta",
        "rustup",
        "update-alternatives",
        "alternatives",
        "chsh",
        "usermod",
        "useradd",
        "getent",
        "id",
        "groups",
        "who",
        "whoami",
        "printenv",
        "export",
        "declare",
        "typeset",
        "local",
        "readonly",
        "unset",
        "alias",
        "unalias",
        "set",
        "shopt",
        "complete",
        "compgen",
        "command",
        "jq",
        "yq",
        "xq",
        "curl",
        "wget",
        "http",
        "ssh-keygen",
        "base64",
        "base32",
        "iconv",
        "dos2unix",
        "unix2dos",
        "awk",
        "gawk",
        "mawk",
        "sed",
        "perl",
        "python",
        "python3",
        "ruby",
        "node",
        "lua",
        "php",
        "date",
        "cal",
        "sleep",
        "seq",
        "yes",
        "expr",
        "bc",
        "numfmt",
        "factor",
        "shuf",
        "mktemp",
        "tee",
        "kill",
        "killall",
        "pkill",
        "pgrep",
        "pidof",
    ]
)
# Options of any program whose value is code it runs: their literal command lines are judged (`lua -e
# 'os.execute("…")'`, `guile -c '(system "…")'`, `dc -e '!…'`, `mail --exec='!…'`, `make --eval='$(shell …)'`).
CODE_OPTIONS = ("-e", "-c", "-x", "--eval", "--exec", "--command", "--expression", "-ex", "-eval", "-Command")


# An option whose name says its value is a command the program runs (`--password-command=…`, `--on-download-
# complete=…`, `--exec …`, `-o ssh_command=…`, `--gpu-launcher=…`, `--filter=…`): judged like a line.
_COMMAND_OPTION = deferred(
    r"^(?:--?)?(?:[\w.-]*[_-])?(?:exec|command|cmd|script|shell|run|hook|pager|editor|filter|wrapper|rsh|askpass|"
    r"launcher|program|pre|post|up|down|call|on-[\w-]+|use-askpass|conf-script|bind|ssh_command|pipe)$",
    re.IGNORECASE,
)
# Text forms that run a command inside another language's value: `!cmd` (hg aliases, mysql, dc, lftp), `.shell cmd`
# (sqlite3), `\write18{cmd}` (TeX), `%(cmd)` (rpm macros), `execute(cmd)` (fzf bindings).
_EMBEDDED_RUNS = deferred(
    r"^\s*\\?!\s*(.+)$|^\s*\|\s*(.+)$|^\s*\.(?:shell|system)\s+(.+)$|\\write18\{([^}]*)\}|%\(([^)]*)\)|\bexecute\(([^)]*)\)",
    re.DOTALL,
)


# First words that make a code option's value a command line.
_RUNS_WORDS = frozenset(
    {"sh", "bash", "dash", "zsh", "ksh", "exec", "eval", "command", "rm", "dd", "shred", "mkfs", "shutdown", "reboot",
     "poweroff", "halt", "curl", "wget", "chmod", "chown", "kill", "killall", "sudo", "su"}
)  # fmt: skip


# iproute2's programs as the system installs them, and the objects each takes (any prefix of one names it).
_IPROUTE_PLACES = ("", "/sbin/", "/usr/sbin/", "/bin/", "/usr/bin/")
_IPROUTE_OBJECTS = {
    "ip": ("address", "addrlabel", "maddress", "route", "rule", "neighbor", "neighbour", "ntable", "ntbl", "link",
           "l2tp", "fou", "ila", "macsec", "tunnel", "tunl", "tuntap", "tap", "token", "tcpmetrics", "tcp_metrics",
           "monitor", "xfrm", "mroute", "mrule", "netns", "netconf", "vrf", "sr", "nexthop", "mptcp", "ioam", "stats",
           "help"),
    "tc": ("qdisc", "class", "filter", "action", "monitor", "exec", "chain", "help"),
    "bridge": ("link", "fdb", "mdb", "vlan", "vni", "monitor", "help"),
}  # fmt: skip


def named_words(head: str, rest: Sequence[Word]) -> set[int]:
    """Indices of the words that name what the program ``head`` (as written) works on, not a program it runs:
    iproute2's object and command, its first two operands (``ip a sh`` shows addresses: ``sh`` there is no shell;
    ``ip netns exec NAME sh`` runs one, further on). Only for ip, tc and bridge by name or in a system directory
    (``./ip``, a link to anything, is another program: red team 19), only where the first operand abbreviates one of
    its objects, and not a word with a slash or one an option follows (iproute2 takes its options before the
    object)."""
    directory, _slash, program = head.rpartition("/")
    if program not in IPROUTE or (directory + _slash) not in _IPROUTE_PLACES:
        return set()
    named: list[int] = []
    i = 0
    while i < len(rest) and len(named) < 2:
        value = rest[i].value
        if value is None:
            break  # only run time knows it: nothing after it is taken for a name
        if value.startswith("-") and len(value) > 1 and not named:
            i += 2 if value[1:] in IPROUTE_VALUES else 1
            continue
        following = rest[i + 1].value if i + 1 < len(rest) else ""
        if "/" in value or following is None or following.startswith("-"):
            break  # (no iproute2 name holds a slash: `ip l /bin/sh` names a program)
        if not named and not (value and any(o.startswith(value) for o in _IPROUTE_OBJECTS[program])):
            break  # `ip reboot`: no object of ip's
        named.append(i)
        i += 1
    return set(named)


def _embedded(text: str) -> list[Inner]:
    found = _EMBEDDED_RUNS.search(text)
    return [next(g for g in found.groups() if g is not None)] if found else []


def run_texts(program: str, rest: Sequence[Word]) -> list[Inner]:
    """A program this module does not know: the command lines its code options hand a shell (``!cmd``, and the
    literals of system()-like calls in code), and the values of options whose name says they are a command."""
    out: list[Inner] = []
    for i, word in enumerate(rest):
        value = word.value
        if value is None or not value.startswith("-"):
            if value is not None:
                out += _embedded(value)
            continue
        name, eq, given = value.partition("=")
        if not _COMMAND_OPTION.match(name):
            if name in ("-o", "--option", "--config", "-c") and (eq or i + 1 < len(rest)):
                setting = given if eq else rest[i + 1].value or ""
                key, eq2, inner = setting.partition("=")  # -o ssh_command=…, --config alias.x=!…
                if eq2 and (_COMMAND_OPTION.match(key.rsplit(".", 1)[-1]) or inner.lstrip("\"'").startswith("!")):
                    out.append(inner.strip("\"'").lstrip("!"))
            continue
        command_text = given if eq else (rest[i + 1].value if i + 1 < len(rest) else None)
        if command_text is None:
            out.append(DYNAMIC if eq or i + 1 < len(rest) else None)
        elif command_text and not command_text.startswith("-"):
            out.append(command_text.strip("\"'").lstrip("!"))
    for text in all_values(rest, CODE_OPTIONS):
        if not isinstance(text, str):
            continue
        stripped = text.strip()
        out += _embedded(stripped)
        first = stripped.split(None, 1)[0] if stripped else ""
        if first == "spawn":  # expect -c 'spawn rm -rf ~'
            out.append(stripped.split(None, 1)[1] if " " in stripped else None)
        elif first.rsplit("/", 1)[-1] in _RUNS_WORDS:
            out.append(stripped)  # genie -c 'rm -rf ~', perlbug -e 'exec …': a command line
        out += literal_commands(stripped)
        found = re.search(r"\$\(shell\s+([^)]*)\)", stripped)  # make --eval='$(shell …)'
        if found:
            out.append(found.group(1))
    return out
