"""Programs' own "run this" options: where a program this layer knows takes a command it runs besides ``unwrap``'s.

Threat: `git rebase -x 'rm -rf ~'`, `gdb -batch -ex 'shell …'`, `vim -c '!…'`, `sed '1e …'`, `zip -TT …`,
`rsync -e …`, `nc -e /bin/sh`, `socat exec:…`, `awk 'BEGIN{system("…")}'`, `python3 -c 'os.system("…")'`:
a program that runs text it was given. ``option_commands`` finds that text among the program's arguments, one
table entry per program, and hands code and scripts to ``code_texts`` to read. Each text is returned for judging
like a command line (a string), a command (words), or DYNAMIC when the text is only known at run time or is code
this layer cannot read. A program no entry here knows is ``unknown_programs``'.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from mcp_server_guard.shell.strings.code_texts import (
    awk_runs,
    debugger_command,
    editor_command,
    literal_commands,
    program_text_runs,
    sed_runs,
)
from mcp_server_guard.shell.strings.parsing import Word
from mcp_server_guard.shell.strings.wrappers import DYNAMIC, Inner, after_options, all_values, joined, skip_options

_TMUX_RUNS = frozenset({"new", "new-session", "new-window", "neww", "split-window", "splitw", "run-shell", "run",
                        "respawn-pane", "respawnp", "respawn-window", "pipe-pane", "if-shell"})  # fmt: skip
_VIM = frozenset({"vim", "vi", "nvim", "ex", "view", "vimdiff", "gvim", "rvim"})
_GIT_FILTERS = ("--tree-filter", "--index-filter", "--msg-filter", "--env-filter", "--commit-filter",
                "--parent-filter", "--tag-name-filter", "--setup")  # fmt: skip


def option_commands(program: str, rest: list[Word]) -> list[Inner]:
    """What ``program`` runs through its own options or program text (besides ``unwrap``'s command)."""
    values = [w.value for w in rest]
    out: list[Inner] = []
    if program == "git":
        sub = next((i for i, v in enumerate(values) if v is not None and not v.startswith("-")), None)
        name = values[sub] if sub is not None else None
        tail = rest[sub + 1 :] if sub is not None else []
        if name == "rebase":
            out += all_values(tail, ("-x", "--exec"))
        elif name == "submodule" and tail and tail[0].value == "foreach":
            words = [w for w in tail[1:] if w.value not in ("--recursive", "-q", "--quiet")]
            out.append(joined(words))
        elif name == "filter-branch":
            out += all_values(tail, _GIT_FILTERS)
        elif name == "difftool":
            out += all_values(tail, ("-x", "--extcmd"))
        elif name == "send-email":
            out += all_values(tail, ("--sendmail-cmd", "--to-cmd", "--cc-cmd", "--header-cmd"))
    elif program in ("make", "gmake"):
        for text in all_values(rest, ("--eval", "-E")):
            out += (
                (program_text_runs("make", "\t" + text.replace("\n", "\n\t")) or [])
                if isinstance(text, str)
                else [text]
            )
    elif program in ("ssh", "scp", "sftp", "slogin"):
        for text in all_values(rest, ("-o",)):
            if not isinstance(text, str):
                continue
            key, _, setting = text.partition("=") if "=" in text else text.partition(" ")
            if key.strip().lower() in ("proxycommand", "localcommand", "knownhostscommand", "remotecommand"):
                out.append(setting.strip())
        if program in ("scp", "sftp"):
            out += [_split(t) if isinstance(t, str) else t for t in all_values(rest, ("-S",))]
    elif program in ("tmux",):
        sub = next((i for i, v in enumerate(values) if v in _TMUX_RUNS), None)
        if sub is not None:
            tail = [w for w in rest[sub + 1 :]]
            start = skip_options(tail, frozenset("censtxyFPltTIE"), frozenset())
            out.append(joined(tail[start:]) if start < len(tail) else None)
    elif program == "tcpdump":
        out += [_split(t) if isinstance(t, str) else t for t in all_values(rest, ("-z",))]
    elif program == "screen":
        out.append(after_options(rest, "SpcehLlTtx"))
    elif program in ("gdb", "cgdb"):
        for text in all_values(rest, ("-ex", "--ex", "-eval-command", "--eval-command", "-iex", "--iex")):
            out.append(debugger_command(text))
    elif program in _VIM:
        texts = all_values(rest, ("-c", "--cmd")) + [v[1:] for v in values if v is not None and v.startswith("+")]
        out += [editor_command(text) for text in texts]
    elif program == "sed":
        out += [sed_runs(text) for text in sed_scripts(rest)]
    elif program in ("zip",):
        out += all_values(rest, ("-TT", "--unzip-command"))
    elif program == "rsync":
        out += all_values(rest, ("-e", "--rsh", "--rsync-path"))
    elif program in ("nc", "ncat", "netcat", "nc.traditional", "nc.openbsd"):
        for text in all_values(rest, ("-e", "--exec")):
            out.append(_split(text) if isinstance(text, str) else DYNAMIC)
        out += all_values(rest, ("-c", "--sh-exec", "--lua-exec"))
    elif program == "socat":
        for value in values:
            if value is None:
                continue
            kind, _, body = value.partition(":")
            if kind.lower() in ("exec", "system"):
                body = body.split(",")[0]
                out.append(body if kind.lower() == "system" else _split(body))
    elif program in ("awk", "gawk", "mawk", "nawk"):
        out += [awk_runs(text) for text in awk_programs(rest)]
    elif program in (
        "python",
        "python3",
        "perl",
        "ruby",
        "node",
        "nodejs",
        "php",
        "deno",
        "bun",
        "lua",
        "R",
        "Rscript",
    ):
        for text in all_values(rest, ("-c", "-e", "-E", "--eval", "-r", "-p", "--print")):
            if isinstance(text, str):
                out += literal_commands(text)
    elif program in ("hyperfine",):
        out += [w.value if w.value is not None else DYNAMIC for w in rest if not (w.value or "-").startswith("-")]
    elif program in ("less", "more", "man"):
        out += [v[2:] for v in values if v is not None and v.startswith(("+!", "+|"))]
        if program == "man":
            out += all_values(rest, ("-P", "--pager", "-H", "--html"))
    return [item for item in out if item is not None]


def _split(text: str) -> Inner:
    """A program and its arguments in one string, split the way these programs split it (like a shell)."""
    try:
        return [[Word(part, part) for part in shlex.split(text)]]
    except ValueError:
        return DYNAMIC


# Programs whose command's stdin is a network connection: a shell there runs what the other end sends.
NETWORK_FED = frozenset({"nc", "ncat", "netcat", "nc.traditional", "nc.openbsd", "socat"})


_SED_VALUED = frozenset("efl")  # -e SCRIPT, -f FILE, -l N (the rest of a cluster, or the next word)
_SED_LONG_VALUED = ("expression", "file", "line-length")


def sed_scripts(words: Sequence[Word]) -> list[str]:
    """The scripts a sed command line gives: -e SCRIPT, a cluster ending in e (``-ne'1e cmd'``, ``-Ee SCRIPT``),
    --expression and any prefix of it getopt takes (``--e=``, ``--expr``), or else its first operand (red team 21:
    the attached and abbreviated spellings went unread). A run-time script is left out (the caller decides)."""
    scripts: list[str] = []
    from_file = False
    operands: list[str | None] = []
    i = 0
    while i < len(words):
        value = words[i].value
        following = words[i + 1].value if i + 1 < len(words) else None
        i += 1
        if value is None or value == "-" or not value.startswith("-"):
            operands.append(value)
            continue
        if value == "--":
            operands += [w.value for w in words[i:]]
            break
        if value.startswith("--"):
            name, eq, attached = value[2:].partition("=")
            long = next((full for full in _SED_LONG_VALUED if name and full.startswith(name)), None)
            if long is None:
                continue
            given = attached if eq else following
            i += 0 if eq else 1
            if long == "expression" and given is not None:
                scripts.append(given)
            from_file = from_file or long == "file"
            continue
        for at, letter in enumerate(value[1:], start=1):
            if letter == "i":
                break  # -i[SUFFIX]: the rest of the word is a suffix
            if letter in _SED_VALUED:
                given = value[at + 1 :] or following
                i += 0 if value[at + 1 :] else 1
                if letter == "e" and given is not None:
                    scripts.append(given)
                from_file = from_file or letter == "f"
                break
    if not scripts and not from_file and operands and operands[0] is not None:
        scripts.append(operands[0])
    return scripts


def awk_programs(words: Sequence[Word]) -> list[str]:
    """The program texts an awk command line gives (its first operand, after its options)."""
    programs: list[str] = []
    skip_next = False
    for word in words:
        value = word.value
        if skip_next:
            skip_next = False
            continue
        if value is None:
            break
        if value in ("-F", "-v", "-f", "--file", "--assign", "--field-separator", "-i", "-l", "--include", "--load"):
            skip_next = True
            if value in ("-f", "--file"):
                return []  # the program is in a file
            continue
        if value.startswith("-") and len(value) > 1:
            continue
        programs.append(value)
        break
    return programs
