"""Programs that run another command: where that command is in their arguments.

``sudo rm -rf ~`` runs ``rm``; so do ``strace -f rm``, ``uv run rm``, ``find -exec rm``, ``xargs rm``,
``ssh host 'rm -rf ~'`` and ``git bisect run rm``. Each wrapper here returns what it runs: word lists (a
command with its arguments), a command line (a string a shell will parse), ``DYNAMIC`` (a command only
run time knows) or ``None`` (it runs nothing we can see). Words that the wrapper fills in at run time
(``xargs``' input, ``parallel``'s ``{}``) are returned as unknown words, so a rule that could match them
asks instead of allowing.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from mcp_server_guard.shell.parsing import Word

DYNAMIC = object()  # a command string only known at run time
Inner = list[list[Word]] | str | object | None

UNKNOWN = Word(None, "…")


def skip_options(
    words: Sequence[Word], with_value: frozenset[str] = frozenset(), long_value: frozenset[str] = frozenset()
) -> int:
    """Index of the first word after a wrapper's own options (``--`` ends them)."""
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
            last = letters[-1]
            # -u root, -uroot, -Eu root: a value-taking letter takes the rest of the word, or the next word.
            taker = next((pos for pos, letter in enumerate(letters) if letter in with_value), None)
            i += 2 if taker is not None and taker == len(letters) - 1 and last in with_value else 1
            continue
        return i
    return i


def _after_options(rest: list[Word], short: str = "", long: Sequence[str] = (), skip: int = 0) -> Inner:
    start = skip_options(rest, frozenset(short), frozenset(long)) + skip
    return [rest[start:]] if start < len(rest) else None


def _string(word: Word | None) -> Inner:
    if word is None:
        return None
    return word.value if word.value is not None else DYNAMIC


def _joined(words: Sequence[Word]) -> Inner:
    """Words a program joins with spaces and hands to a shell (``watch``, ``ssh host cmd``)."""
    if not words:
        return None
    if any(w.value is None for w in words):
        return DYNAMIC
    return " ".join(w.value or "" for w in words)


def _option_value(rest: Sequence[Word], names: Sequence[str], *, anywhere: bool = False) -> Inner:
    """The value of the first of ``names`` (``-c CMD``, ``-cCMD``, ``--command=CMD``, ``-qc CMD``) among the
    options before the first operand (or ``anywhere``, for programs that take options after operands)."""
    for i, word in enumerate(rest):
        value = word.value or ""
        if not anywhere and value != "-" and not value.startswith("-"):
            return None
        for name in names:
            if name.startswith("--"):
                if value == name:
                    return _string(rest[i + 1] if i + 1 < len(rest) else None)
                if value.startswith(name + "="):
                    return value.partition("=")[2]
            elif value.startswith("-") and not value.startswith("--") and name[1] in value[1:]:
                attached = value[value.index(name[1], 1) + 1 :]
                if attached:
                    return attached
                return _string(rest[i + 1] if i + 1 < len(rest) else None)
    return None


def _replaced(words: Sequence[Word], marker: str) -> list[Word]:
    """A word that is ``marker`` becomes unknown (the wrapper fills it in at run time); a word that holds it
    keeps its text with FILE in the marker's place, marked as filled in (`sh -c 'rm {}'`)."""
    out: list[Word] = []
    for word in words:
        value = word.value or ""
        if value == marker:
            out.append(UNKNOWN)
        elif marker in value:
            out.append(Word(value.replace(marker, "FILE"), word.raw, filled=True))
        else:
            out.append(word)
    return out


def _xargs(rest: list[Word]) -> Inner:
    start = skip_options(
        rest,
        frozenset("adEILnPs"),
        frozenset(
            {"arg-file", "delimiter", "eof", "replace", "max-lines", "max-args", "max-procs", "max-chars",
             "process-slot-var"}
        ),
    )  # fmt: skip
    replace: str | None = None
    for i, word in enumerate(rest[:start]):
        value = word.value or ""
        if value in ("--replace",) or value.startswith("--replace="):
            replace = value.partition("=")[2] or "{}"
        elif value.startswith("-") and not value.startswith("--"):
            # -I R, -IR, -0I R, -i, -iR, -0i: the letters may be clustered (GNU getopt); -I takes the rest or the
            # next word, -i the rest only.
            letters = value[1:]
            for pos, letter in enumerate(letters):
                if letter == "I":
                    replace = letters[pos + 1 :] or (rest[i + 1].value if i + 1 < len(rest) else None) or "{}"
                    break
                if letter == "i":
                    replace = letters[pos + 1 :] or "{}"
                    break
                if letter in "adELnPs":
                    break  # a value-taking letter: the rest is its value
    command = rest[start:] or [Word("echo", "echo")]
    if replace:
        return [_replaced(command, replace)]
    return [[*command, UNKNOWN]]  # xargs appends what it reads to the command


def _find_exec(rest: list[Word]) -> Inner:
    """``find … -exec cmd {} ;``: ``{}`` is a path found under the start points (never an option)."""
    starts = []
    for word in rest:
        if (word.value or "").startswith("-") or word.value in ("!", "(", ")"):
            break
        starts.append(word.value or ".")
    start = (starts or ["."])[0].rstrip("/") or "/"
    commands: list[list[Word]] = []
    i = 0
    while i < len(rest):
        if rest[i].value in ("-exec", "-execdir", "-ok", "-okdir", "--exec", "-x", "-X", "--exec-batch"):
            j = i + 1
            while j < len(rest) and rest[j].value not in (";", "+", r"\;"):
                j += 1
            if j > i + 1:
                found = f"{start}/{{}}"
                commands.append(
                    [
                        Word((w.value or "").replace("{}", found), w.raw) if w.value is not None else w
                        for w in rest[i + 1 : j]
                    ]
                )
            i = j + 1
        else:
            i += 1
    return commands


def _parallel(rest: list[Word]) -> Inner:
    """``parallel CMD ::: args`` runs CMD per arg; ``parallel ::: 'cmd1' 'cmd2'`` runs each arg as a command."""
    split = next((i for i, w in enumerate(rest) if (w.value or "").startswith(":::")), len(rest))
    start = skip_options(rest[:split], frozenset("jSaIdE"), frozenset({"jobs", "arg-file", "sshlogin", "delimiter"}))
    template = rest[start:split]
    if template:
        return [_replaced(template, "{")] if any("{" in (w.value or "") for w in template) else [[*template, UNKNOWN]]
    lines = [w.value for w in rest[split + 1 :]]
    if not lines or any(line is None for line in lines):
        return DYNAMIC
    return "\n".join(line for line in lines if line is not None)


def _ssh(rest: list[Word]) -> Inner:
    start = skip_options(rest, frozenset("bcDEeFIiJLlmOopQRSWwB"))
    remote = rest[start + 1 :]  # after the host: a command line the remote shell runs
    return _joined(remote)


def _docker(rest: list[Word]) -> Inner:
    top = skip_options(rest, frozenset("Hcl"), frozenset({"host", "context", "config", "log-level"}))
    if top >= len(rest):
        return None
    sub = rest[top].value
    tail = rest[top + 1 :]
    if sub == "container" and tail:
        sub, tail = tail[0].value, tail[1:]
    if sub == "compose" and tail and tail[0].value in ("run", "exec"):
        sub, tail = tail[0].value, tail[1:]
    if sub not in ("run", "exec", "create"):
        return None
    values = "vepwulhmaLcdi" if sub != "exec" else "euw"
    start = skip_options(tail, frozenset(values), _DOCKER_LONG_VALUES)
    return [tail[start + 1 :]] if start + 1 < len(tail) else None


_DOCKER_LONG_VALUES = frozenset(
    {
        "volume", "env", "publish", "workdir", "user", "name", "network", "net", "entrypoint", "label", "mount",
        "env-file", "hostname", "cpus", "memory", "restart", "platform", "add-host", "device", "cap-add", "cap-drop",
        "security-opt", "ulimit", "tmpfs", "log-driver", "log-opt", "gpus", "pull", "cidfile", "ipc", "pid", "uts",
        "userns", "runtime", "shm-size", "stop-signal", "stop-timeout", "health-cmd", "dns", "attach", "expose",
        "group-add", "link", "detach-keys", "cgroupns", "cpuset-cpus", "memory-swap", "label-file", "volumes-from",
    }
)  # fmt: skip


def _kubectl(rest: list[Word]) -> Inner:
    if not any(w.value == "exec" for w in rest) or not any(w.value == "--" for w in rest):
        return None
    after = next(i for i, w in enumerate(rest) if w.value == "--")
    return [rest[after + 1 :]]


def _runner(rest: list[Word]) -> Inner:
    """``uv run``, ``poetry run``, ``npm exec``, ``git bisect run``, ``bundle exec`` …: run what follows."""
    if not rest:
        return None
    start = skip_options(
        rest,
        frozenset("pw"),
        frozenset({"with", "python", "package", "extra", "group", "env-file", "directory", "project", "index", "from"}),
    )
    return [rest[start:]] if start < len(rest) else None


_RUN_SUBCOMMANDS = {
    "uv": ("run",), "poetry": ("run",), "pdm": ("run",), "pipenv": ("run",), "hatch": ("run",), "conda": ("run",),
    "mamba": ("run",), "bundle": ("exec",), "pnpm": ("exec", "dlx"), "yarn": ("exec", "dlx"),
    "rye": ("run",),
    # version managers: `pyenv exec rm -rf ~`, `mise x -- bash -c …`, `rustup run stable cargo …`
    "pyenv": ("exec",), "rbenv": ("exec",), "nodenv": ("exec",), "goenv": ("exec",), "plenv": ("exec",),
    "asdf": ("exec",), "mise": ("exec", "x"), "rtx": ("exec", "x"), "volta": ("run",), "fnm": ("exec",),
    "nvm": ("exec", "run"), "sdk": ("exec",), "direnv": ("exec",), "devbox": ("run",), "pixi": ("run", "exec"),
}  # fmt: skip


# Programs that run the command after their own options: short options that take a value, long ones that do.
_PLAIN_WRAPPERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "nohup": ("", ()), "builtin": ("", ()), "setsid": ("", ()), "catchsegv": ("", ()), "unbuffer": ("", ()),
    "chronic": ("", ()), "fakeroot": ("lsi", ("lib", "faked")), "stdbuf": ("ioe", ("input", "output", "error")),
    "time": ("fo", ("format", "output")), "linux32": ("", ()), "linux64": ("", ()), "i386": ("", ()),
    "x86_64": ("", ()), "faketime": ("f", ()), "rlwrap": ("abcfHlopPsSt", ()), "proxychains": ("f", ()),
    "proxychains4": ("f", ()), "torsocks": ("auPp", ()), "tsocks": ("", ()), "eatmydata": ("", ()),
    "nocache": ("n", ()), "dbus-launch": ("", ("config-file",)), "dbus-run-session": ("", ("config-file",)),
    "xvfb-run": ("nsfe", ("server-num", "server-args", "auth-file", "error-file")),
    "valgrind": ("", ()), "tini": ("", ()), "dumb-init": ("", ()), "gosu": ("", ()), "su-exec": ("", ()),
    "cpulimit": ("lpe", ("limit", "pid", "exe")), "trickle": ("udwtlnL", ()), "caffeinate": ("tw", ()),
    "chpst": ("ugUbenlmdofpcr", ()), "softlimit": ("amdsloprft", ()), "setuidgid": ("", ()), "envdir": ("", ()),
    "ssh-agent": ("aEPt", ()), "lockf": ("t", ()), "retry": ("tdm", ()),
}  # fmt: skip
# These take one operand (a user, a directory, a file, a time) before the command.
_ONE_OPERAND = frozenset({"gosu", "su-exec", "setuidgid", "envdir", "lockf", "faketime"})


def unwrap(program: str, rest: list[Word]) -> Inner:
    """What ``program`` runs, given its arguments ``rest``."""
    if program in ("sudo", "doas", "run0", "pkexec"):
        return _after_options(
            rest, "ugpCDrtUTh", ("user", "group", "prompt", "close-from", "chdir", "role", "type", "other-user")
        )
    if program in ("nice", "ionice"):
        return _after_options(rest, "ncpt", ("adjustment", "class"))
    if program in _PLAIN_WRAPPERS:
        short, long = _PLAIN_WRAPPERS[program]
        return _after_options(rest, short, long, skip=1 if program in _ONE_OPERAND else 0)
    if program == "setarch":
        if not rest or (rest[0].value or "-").startswith("-"):
            return None  # setarch --list
        start = 1 + skip_options(rest[1:], frozenset(), frozenset({"uname-2.6"}))
        return [rest[start:]] if start < len(rest) else None
    if program in ("timeout", "taskset"):
        return _after_options(rest, "sk", ("signal", "kill-after"), skip=1)  # skip the duration / mask
    if program in ("strace", "ltrace"):
        return _after_options(rest, "oepsuEPIbaXOSAnD", ("output", "trace", "signal", "status", "user", "env"))
    if program == "chroot":
        return _after_options(rest, "", ("userspec", "groups"), skip=1)  # skip NEWROOT
    if program == "chrt":
        if any((w.value or "").startswith("-") and "p" in (w.value or "")[1:] for w in rest if w.value != "--"):
            return None  # chrt -p: changes a running process
        return _after_options(rest, "TPD", ("sched-runtime", "sched-period", "sched-deadline"), skip=1)
    if program in ("prlimit", "unshare", "setpriv", "firejail", "systemd-run", "nsenter", "cgexec", "numactl"):
        return _after_options(
            rest,
            "pSGuEMHtgnw",
            ("reuid", "regid", "groups", "inh-caps", "ambient-caps", "bounding-set", "securebits", "pdeathsig",
             "selinux-label", "apparmor-profile", "ruid", "euid", "rgid", "egid", "unit", "property", "description",
             "slice", "setenv", "uid", "gid", "nice", "machine", "host", "working-directory", "root", "wd",
             "propagation", "target", "setuid", "setgid"),
        )  # fmt: skip
    if program == "capsh":
        # capsh … -- ARGS runs /bin/bash ARGS (capsh -- -c 'cmd').
        for i, word in enumerate(rest):
            if word.value in ("--", "=="):
                return [[Word("bash", "bash"), *rest[i + 1 :]]]
        return None
    if program == "script":
        return _option_value(rest, ("--command", "-c"))
    if program == "command":
        start = skip_options(rest)
        if any((w.value or "") in ("-v", "-V") for w in rest[:start]):
            return None  # command -v only looks the name up
        return [rest[start:]]
    if program == "exec":
        return [rest[skip_options(rest, frozenset("a")) :]] if rest else None
    if program == "coproc":
        if len(rest) > 1 and rest[1].value == "{":
            return [rest[2:]]  # coproc NAME { cmd; }
        return [rest]
    if program in ("busybox", "toybox", "coreutils"):
        # `coreutils --coreutils-prog=rm -rf ~`: the program is named by an option
        if rest and (rest[0].value or "").startswith("--coreutils-prog="):
            name = (rest[0].value or "").partition("=")[2]
            return [[Word(name, name), *rest[1:]]]
        return [rest]
    if program == "xargs":
        return _xargs(rest)
    if program == "flock":
        start = skip_options(rest, frozenset("wE"), frozenset({"timeout", "conflict-exit-code"}))
        tail = rest[start + 1 :]
        if tail and tail[0].value in ("-c", "--command"):
            return _string(tail[1] if len(tail) > 1 else None)
        return [tail]
    if program == "watch":
        return _joined(rest[skip_options(rest, frozenset("ndq"), frozenset({"interval", "differences"})) :])
    if program == "trap" and rest:
        start = 1 if rest[0].value == "--" else 0
        if any(w.value in ("-p", "-l", "-P") for w in rest[:1]):
            return None  # trap -p / -l only print
        return _string(rest[start]) if start < len(rest) else None
    if program in ("find", "fd", "fdfind"):
        return _find_exec(rest)
    if program in ("su", "runuser", "sg"):
        return _option_value(rest, ("--command", "-c"), anywhere=True)
    if program in ("ssh", "rsh"):
        return _ssh(rest)
    if program in ("docker", "podman", "nerdctl"):
        return _docker(rest)
    if program in ("kubectl", "oc"):
        return _kubectl(rest)
    if program == "parallel":
        return _parallel(rest)
    if program in ("npx", "pnpx", "bunx") or (program == "npm" and rest and rest[0].value in ("exec", "x")):
        tail = rest[1:] if program == "npm" else rest
        code = _option_value(tail, ("--call", "-c"))
        return code if code is not None else _runner(tail)
    if program == "nix-shell":
        return _option_value(rest, ("--run", "--command"))
    if program == "git" and len(rest) > 2 and rest[0].value == "bisect" and rest[1].value == "run":
        return [rest[2:]]
    if program in _RUN_SUBCOMMANDS and rest and rest[0].value in _RUN_SUBCOMMANDS[program]:
        if program == "direnv":
            return _runner(rest[2:])  # direnv exec DIR CMD
        return _runner(rest[1:])
    if program == "rustup" and len(rest) > 2 and rest[0].value == "run":
        return [rest[2:]]  # rustup run TOOLCHAIN CMD
    if program == "uvx" or (program == "pipx" and rest and rest[0].value == "run"):
        return _runner(rest if program == "uvx" else rest[1:])
    return None


# -- programs' own "run this" options -----------------------------------------------------------------------
#
# Threat: `git rebase -x 'rm -rf ~'`, `gdb -batch -ex 'shell …'`, `vim -c '!…'`, `sed '1e …'`, `zip -TT …`,
# `rsync -e …`, `nc -e /bin/sh`, `socat exec:…`, `awk 'BEGIN{system("…")}'`, `python3 -c 'os.system("…")'`:
# a program that runs text it was given. Each text is returned for judging like a command line (a string), a
# command (words), or DYNAMIC when the text is only known at run time or is code this layer cannot read.

_TMUX_RUNS = frozenset({"new", "new-session", "new-window", "neww", "split-window", "splitw", "run-shell", "run",
                        "respawn-pane", "respawnp", "respawn-window", "pipe-pane", "if-shell"})  # fmt: skip
_VIM = frozenset({"vim", "vi", "nvim", "ex", "view", "vimdiff", "gvim", "rvim"})
_GIT_FILTERS = ("--tree-filter", "--index-filter", "--msg-filter", "--env-filter", "--commit-filter",
                "--parent-filter", "--tag-name-filter", "--setup")  # fmt: skip
# String literals given to a call that runs them as a command line, in interpreter code.
_CODE_RUNS = re.compile(
    r"""(?:\bsystem|\bpopen|\bexec[lv]?p?e?|\bspawn|\bcheck_output|\bcheck_call|\bgetoutput|\bgetstatusoutput|\brun|\bcall|\bshell_exec|\bpassthru|\bexecSync|\bexecFileSync|\bspawnSync|\bexecute|\bcallCommand|\bspawn\w+|\bshell-command|\bcall-process-shell-command|\bstart-process-shell-command|\bproc_open|\bpcntl_exec|\brun-shell-command|\bos:cmd|\bSystem\.shell|\bshell_command|\bgetRuntime\(\)\.exec|\bopen\s*\(?\s*\w+\s*,\s*(?=['"]\|))\s*\(?\s*(['"])\|?((?:\\.|(?!\1).)*)\1"""
)
_EXECUTE_METHOD = re.compile(r"""(['"])((?:\\.|(?!\1).)+)\1\s*\.execute\s*\(""")  # groovy: "cmd".execute()
_BACKTICKS = re.compile(r"`([^`]+)`|%x\((.*?)\)|%x\{(.*?)\}|\bqx\s*[({/](.*?)[)}/]")


def option_commands(program: str, rest: list[Word]) -> list[Inner]:
    """What ``program`` runs through its own options or program text (besides ``unwrap``'s command)."""
    values = [w.value for w in rest]
    out: list[Inner] = []
    if program == "git":
        sub = next((i for i, v in enumerate(values) if v is not None and not v.startswith("-")), None)
        name = values[sub] if sub is not None else None
        tail = rest[sub + 1 :] if sub is not None else []
        if name == "rebase":
            out += _all_values(tail, ("-x", "--exec"))
        elif name == "submodule" and tail and tail[0].value == "foreach":
            words = [w for w in tail[1:] if w.value not in ("--recursive", "-q", "--quiet")]
            out.append(_joined(words))
        elif name == "filter-branch":
            out += _all_values(tail, _GIT_FILTERS)
        elif name == "difftool":
            out += _all_values(tail, ("-x", "--extcmd"))
        elif name == "send-email":
            out += _all_values(tail, ("--sendmail-cmd", "--to-cmd", "--cc-cmd", "--header-cmd"))
    elif program in ("make", "gmake"):
        for text in _all_values(rest, ("--eval", "-E")):
            out += (
                (program_text_runs("make", "\t" + text.replace("\n", "\n\t")) or [])
                if isinstance(text, str)
                else [text]
            )
    elif program in ("ssh", "scp", "sftp", "slogin"):
        for text in _all_values(rest, ("-o",)):
            if not isinstance(text, str):
                continue
            key, _, setting = text.partition("=") if "=" in text else text.partition(" ")
            if key.strip().lower() in ("proxycommand", "localcommand", "knownhostscommand", "remotecommand"):
                out.append(setting.strip())
        if program in ("scp", "sftp"):
            out += [_split(t) if isinstance(t, str) else t for t in _all_values(rest, ("-S",))]
    elif program in ("tmux",):
        sub = next((i for i, v in enumerate(values) if v in _TMUX_RUNS), None)
        if sub is not None:
            tail = [w for w in rest[sub + 1 :]]
            start = skip_options(tail, frozenset("censtxyFPltTIE"), frozenset())
            out.append(_joined(tail[start:]) if start < len(tail) else None)
    elif program == "tcpdump":
        out += [_split(t) if isinstance(t, str) else t for t in _all_values(rest, ("-z",))]
    elif program == "screen":
        out.append(_after_options(rest, "SpcehLlTtx"))
    elif program in ("gdb", "cgdb"):
        for text in _all_values(rest, ("-ex", "--ex", "-eval-command", "--eval-command", "-iex", "--iex")):
            out.append(_debugger_command(text))
    elif program in _VIM:
        texts = _all_values(rest, ("-c", "--cmd")) + [v[1:] for v in values if v is not None and v.startswith("+")]
        out += [_editor_command(text) for text in texts]
    elif program == "sed":
        out += [_sed_runs(text) for text in _sed_scripts(rest)]
    elif program in ("zip",):
        out += _all_values(rest, ("-TT", "--unzip-command"))
    elif program == "rsync":
        out += _all_values(rest, ("-e", "--rsh", "--rsync-path"))
    elif program in ("nc", "ncat", "netcat", "nc.traditional", "nc.openbsd"):
        for text in _all_values(rest, ("-e", "--exec")):
            out.append(_split(text) if isinstance(text, str) else DYNAMIC)
        out += _all_values(rest, ("-c", "--sh-exec", "--lua-exec"))
    elif program == "socat":
        for value in values:
            if value is None:
                continue
            kind, _, body = value.partition(":")
            if kind.lower() in ("exec", "system"):
                body = body.split(",")[0]
                out.append(body if kind.lower() == "system" else _split(body))
    elif program in ("awk", "gawk", "mawk", "nawk"):
        out += [_awk_runs(text) for text in _awk_programs(rest)]
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
        for text in _all_values(rest, ("-c", "-e", "-E", "--eval", "-r", "-p", "--print")):
            if isinstance(text, str):
                out += literal_commands(text)
    elif program in ("hyperfine",):
        out += [w.value if w.value is not None else DYNAMIC for w in rest if not (w.value or "-").startswith("-")]
    elif program in ("less", "more", "man"):
        out += [v[2:] for v in values if v is not None and v.startswith(("+!", "+|"))]
        if program == "man":
            out += _all_values(rest, ("-P", "--pager", "-H", "--html"))
    return [item for item in out if item is not None]


def _split(text: str) -> Inner:
    """A program and its arguments in one string, split the way these programs split it (like a shell)."""
    try:
        return [[Word(part, part) for part in shlex.split(text)]]
    except ValueError:
        return DYNAMIC


# Programs whose command's stdin is a network connection: a shell there runs what the other end sends.
NETWORK_FED = frozenset({"nc", "ncat", "netcat", "nc.traditional", "nc.openbsd", "socat"})


def _all_values(words: Sequence[Word], names: Sequence[str]) -> list[Inner]:
    """Every value of the options ``names`` (``-x V``, ``-xV`` for one-letter ones, ``--name=V``)."""
    found: list[Inner] = []
    for i, word in enumerate(words):
        value = word.value
        if value is None:
            continue
        for name in names:
            if value == name:
                found.append(_string(words[i + 1] if i + 1 < len(words) else None))
            elif name.startswith("--") and value.startswith(name + "="):
                found.append(value.partition("=")[2])
            elif len(name) == 2 and value.startswith(name) and len(value) > 2 and not value.startswith("--"):
                found.append(value[2:])
    return found


def _debugger_command(text: Inner) -> Inner:
    if not isinstance(text, str):
        return text
    stripped = text.strip()
    if stripped.startswith("!"):
        return stripped[1:]
    word, _, tail = stripped.partition(" ")
    if word in ("shell", "she", "pipe", "|"):
        return tail
    if word in ("python", "py", "pi", "python-interactive", "guile", "gu", "source", "so"):
        return DYNAMIC  # code of another language, or a script from a file
    return None


def _editor_command(text: Inner) -> Inner:
    if not isinstance(text, str):
        return text
    stripped = text.lstrip(": ")
    for prefix in ("silent!", "silent", "sil!", "sil", "exe", "execute"):
        if stripped.startswith(prefix + " "):
            stripped = stripped[len(prefix) + 1 :].lstrip()
    stripped = stripped.strip("\"'")  # :exe "!cmd"
    if stripped.startswith("!"):
        return stripped[1:]
    if "!" in stripped and re.match(r"^(\d+|%|\.|\$|'<,'>|\d+,\d+)?\s*(r|read|w|write)?\s*!", stripped):
        return stripped.split("!", 1)[1]  # :r !cmd, :%!cmd, :w !cmd
    if re.match(r"^(py|python|py3|python3|pyx|lua|perl|ruby|rub|mz|tcl|call|term|terminal|source|so|!)\b", stripped):
        return DYNAMIC
    if re.search(r"\bsystem\s*\(|\bsystemlist\s*\(|\bjobstart\s*\(|\btermopen\s*\(", stripped):
        return DYNAMIC
    return None


def _sed_scripts(words: Sequence[Word]) -> list[str]:
    scripts = [v for v in _all_values(words, ("-e", "--expression")) if isinstance(v, str)]
    from_file = any((w.value or "") in ("-f", "--file") or (w.value or "").startswith("--file=") for w in words)
    if not scripts and not from_file:
        first = next((w.value for w in words if w.value is not None and not w.value.startswith("-")), None)
        if first is not None:
            scripts.append(first)
    return scripts


_SED_ADDRESS = r"(?:\d+|\$|/(?:\\.|[^/])*/[IM]*)(?:~\d+)?"
_SED_RANGE = rf"(?:{_SED_ADDRESS}(?:\s*,\s*(?:{_SED_ADDRESS}|[+~]\d+))?)?"
_SED_E = re.compile(rf"(?:^|[;{{}}\n])\s*{_SED_RANGE}\s*!?\s*e(?:\s+([^;\n}}]*)|\s*(?=$|[;}}\n]))")
_SED_S_E = re.compile(
    rf"(?:^|[;{{}}\n])\s*{_SED_RANGE}\s*!?\s*s([^\\\n\w\s])(?:\\.|(?!\1).)*\1(?:\\.|(?!\1).)*\1[gpiImM0-9w]*e"
)


def _sed_runs(script: str) -> Inner:
    """GNU sed's ``e COMMAND`` runs COMMAND (``e`` alone runs the pattern space); ``s///e`` runs the result."""
    for found in _SED_E.finditer(script):
        command = found.group(1)
        return command.strip() if command and command.strip() else DYNAMIC
    if _SED_S_E.search(script):
        return DYNAMIC  # the replaced line is run as a command: known only at run time
    return None


def _awk_programs(words: Sequence[Word]) -> list[str]:
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


_AWK_STRING = r'"((?:\\.|[^"\\])*)"'
_AWK_LITERAL_RUN = re.compile(rf"\bsystem\s*\(\s*{_AWK_STRING}\s*\)|{_AWK_STRING}\s*\|\s*getline|\|&?\s*{_AWK_STRING}")
_AWK_ANY_RUN = re.compile(r"\bsystem\s*\(|\|\s*getline|\bprintf?\b[^;}]*\|")


def _awk_runs(program: str) -> Inner:
    """awk's system("…"), "…" | getline and print | "…" run a shell command line."""
    texts = [next(g for g in found.groups() if g is not None) for found in _AWK_LITERAL_RUN.finditer(program)]
    rest = _AWK_LITERAL_RUN.sub("", program)
    if _AWK_ANY_RUN.search(rest):
        return DYNAMIC  # built from values at run time
    return "\n".join(t.replace('\\"', '"') for t in texts) if texts else None


def literal_commands(code: str) -> list[Inner]:
    """Command lines interpreter code hands to a shell as literals: system("…"), `…`, os.popen('…'); and the paths
    it deletes through its library (shutil.rmtree('…'), FileUtils.rm_rf('…'), fs.rmSync('…')), as the rm they are."""
    out: list[Inner] = [found.group(2).replace("\\'", "'").replace('\\"', '"') for found in _CODE_RUNS.finditer(code)]
    out += [next(g for g in found.groups() if g is not None) for found in _BACKTICKS.finditer(code)]
    out += [found.group(2) for found in _EXECUTE_METHOD.finditer(code)]
    out = [text for text in out if isinstance(text, str) and text.strip()]
    for found in _ARGV_LISTS.finditer(code):
        items = re.findall(r"""(['"])((?:\\.|(?!\1).)*)\1""", found.group(1))
        if items and len(items) == found.group(1).count(",") + 1:  # every item a literal
            out.append([[Word(item, item) for _, item in items]])
    if _HOME_DELETES.search(code):
        out.append([[Word("rm", "rm"), Word("-rf", "-rf"), Word("~", "~")]])
    if _KILLS_ALL.search(code):
        out.append([[Word("kill", "kill"), Word("-9", "-9"), Word("-1", "-1")]])
    for found in _OPENS_DEVICE.finditer(code):
        out.append([[Word("dd", "dd"), Word(f"of={found.group(1)}", f"of={found.group(1)}")]])
    for found in _CODE_DELETES.finditer(code):
        path = found.group(2)
        out.append([[Word("rm", "rm"), Word("-rf", "-rf"), Word(path, path)]])
    return out


# subprocess.run(["git", "push", "--force"]), execFileSync("rm", ["-rf", …]) is handled as its literals above only
# when written as a string; a list of literals is the argv itself.
_ARGV_LISTS = re.compile(
    r"\b(?:run|call|check_call|check_output|Popen|spawn|spawnSync|execFile|execFileSync|execv|execvp|system)\s*\(\s*"
    r"\[([^\]]*)\]"
)
# Deleting the home directory by name: shutil.rmtree(os.path.expanduser("~")), rm_rf(Dir.home), rmSync(homedir()).
_HOME_DELETES = re.compile(
    r"\b(?:rmtree|rm_rf|rm_r|remove_dir_all|rmSync|rimraf|rmdir|removedirs|deleteRecursively)\s*\(?\s*(?:"
    r"os\.path\.expanduser\(\s*['\"]~['\"]\s*\)|(?:pathlib\.)?Path\.home\(\)|os\.environ\[['\"]HOME['\"]\]|"
    r"os\.getenv\(['\"]HOME['\"]\)|(?:require\(['\"]os['\"]\)|os)\.homedir\(\)|homedir\(\)|Dir\.home|ENV\[['\"]HOME['\"]\]|"
    r"\$ENV\{HOME\}|\$HOME\b)"
    r"|\brm\s*\(\s*homedir\(\)|Remove-Item\b[^;\n]*\s(?:~|\$HOME|\$env:USERPROFILE)(?:\s|$)"
)
_KILLS_ALL = re.compile(r"\b(?:os\.kill|process\.kill|Process\.kill|kill)\s*\(?\s*-1\b")
_OPENS_DEVICE = re.compile(
    r"""\bopen\s*\(?\s*(?:\w+\s*,\s*)?['"]\+?[>]*\s*(/dev/(?:sd|hd|vd|nvme|xvd|mmcblk|disk/)[^'"]*)['"]"""
)
_CODE_DELETES = re.compile(
    r"""\b(?:rmtree|rm_rf|rm_r|remove_dir_all|removedirs|rmSync|rimraf|remove|unlink|unlinkSync|rmdir|rmdirSync|"""
    r"""delete|deleteRecursively)\s*\(?\s*(['"])((?:\\.|(?!\1).)+)\1"""
)


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
_COMMAND_OPTION = re.compile(
    r"^(?:--?)?(?:[\w.-]*[_-])?(?:exec|command|cmd|script|shell|run|hook|pager|editor|filter|wrapper|rsh|askpass|"
    r"launcher|program|pre|post|up|down|call|on-[\w-]+|use-askpass|conf-script|bind|ssh_command|pipe)$",
    re.IGNORECASE,
)
# Text forms that run a command inside another language's value: `!cmd` (hg aliases, mysql, dc, lftp), `.shell cmd`
# (sqlite3), `\write18{cmd}` (TeX), `%(cmd)` (rpm macros), `execute(cmd)` (fzf bindings).
_EMBEDDED_RUNS = re.compile(
    r"^\s*\\?!\s*(.+)$|^\s*\|\s*(.+)$|^\s*\.(?:shell|system)\s+(.+)$|\\write18\{([^}]*)\}|%\(([^)]*)\)|\bexecute\(([^)]*)\)",
    re.DOTALL,
)


# First words that make a code option's value a command line.
_RUNS_WORDS = frozenset(
    {"sh", "bash", "dash", "zsh", "ksh", "exec", "eval", "command", "rm", "dd", "shred", "mkfs", "shutdown", "reboot",
     "poweroff", "halt", "curl", "wget", "chmod", "chown", "kill", "killall", "sudo", "su"}
)  # fmt: skip


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
    for text in _all_values(rest, CODE_OPTIONS):
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


def program_text_runs(program: str, text: str) -> list[Inner] | None:
    """What a script of ``program``'s own language runs (the commands in it, as for its options): awk's system(),
    sed's e, make's recipes and $(shell …), m4's syscmd. None: a language this module cannot read."""
    if program in ("awk", "gawk", "mawk", "nawk"):
        return [_awk_runs(text)]
    if program == "sed":
        return [_sed_runs(text)]
    if program in ("make", "gmake", "bmake"):
        recipes = [line[1:] for line in text.splitlines() if line.startswith("\t")]
        shells = re.findall(r"\$\(shell\s+([^)]*)\)", text)
        dynamic = "$(" in "".join(recipes).replace("$(shell", "") or "${" in "".join(recipes)
        return [*recipes, *shells, *([DYNAMIC] if dynamic else [])]
    if program in ("sqlite3", "sqlite"):
        return [*re.findall(r"(?m)^\s*\.(?:shell|system)\s+(.+)$", text),
                *re.findall(r"(?m)^\s*\.(?:once|output)\s+\|\s*(.+)$", text)]  # fmt: skip
    if program in ("ed", "red"):
        return re.findall(r"(?m)^\s*(?:[\d,.$;+-]*\s*(?:w|r|e|W)?\s*)?!(.+)$", text)
    if program in ("gdb", "cgdb"):
        runs: list[Inner] = [*re.findall(r"(?m)^\s*(?:shell|she|!)\s*(.+)$", text)]
        runs += [m for m in re.findall(r"(?m)^\s*(?:pipe|\|).*?\|\s*(.+)$", text)]
        if re.search(r"(?m)^\s*(?:python|py|pi|guile|gu|source|so)\b", text):
            runs.append(DYNAMIC)
        return runs
    if program in ("psql", "mysql", "mariadb"):
        return [*re.findall(r"(?m)\\!\s*(.+)$", text), *re.findall(r"(?mi)^\s*system\s+(.+)$", text),
                *re.findall(r"(?m)\\[og]\s*\|\s*(.+)$", text),
                *re.findall(r"(?i)\bprogram\s+'([^']*)'", text)]  # fmt: skip
    if program in ("sftp", "ftp", "lftp"):
        return re.findall(r"(?m)^\s*!(.+)$", text)
    if program in ("expect", "tclsh", "wish"):
        found = re.findall(r"\b(?:exec|spawn|system)\s+([^;\n\]]+)", text)
        return [*found, *([DYNAMIC] if re.search(r"\b(?:eval|uplevel|open\s+\|)", text) else [])]
    if program == "dc":
        return re.findall(r"!([^\n]+)", text)
    if program == "duckdb":
        return re.findall(r"(?m)^\s*\.(?:sh|shell|system)\s+(.+)$", text)
    if program in ("gnuplot", "smbclient", "octave", "maxima", "bc"):
        found = re.findall(r"(?m)^\s*!(.+)$", text) + re.findall(r"\bsystem\s*\(?\s*[\"']([^\"']+)[\"']", text)
        return [*found, *([DYNAMIC] if program != "bc" and re.search(r"\bsystem\s*\(?\s*[^\"'\s]", text) else [])]
    if program == "lldb":
        lldb_runs: list[Inner] = [*re.findall(r"(?m)^\s*(?:platform\s+shell|shell)\s+(.+)$", text)]
        return lldb_runs + ([DYNAMIC] if re.search(r"(?m)^\s*(?:script|command\s+script)\b", text) else [])
    if program == "m4":
        found = re.findall(r"\b(?:esyscmd|syscmd)\s*\(([^)]*)\)", text)
        return [*found, *([DYNAMIC] if re.search(r"\b(?:esyscmd|syscmd)\b", text) and not found else [])]
    return None
