"""Programs that run another command: where that command is in their arguments.

``sudo rm -rf ~`` runs ``rm``; so do ``strace -f rm``, ``uv run rm``, ``find -exec rm``, ``xargs rm``,
``ssh host 'rm -rf ~'`` and ``git bisect run rm``. Each wrapper here returns what it runs: word lists (a
command with its arguments), a command line (a string a shell will parse), ``DYNAMIC`` (a command only
run time knows) or ``None`` (it runs nothing we can see). Words that the wrapper fills in at run time
(``xargs``' input, ``parallel``'s ``{}``) are returned as unknown words, so a rule that could match them
asks instead of allowing.

The readers of a program's own options (``skip_options``, ``all_values`` …) live here too: ``run_options`` and
``unknown_programs`` read the options that run a command with them. What those options' texts run is
``code_texts``'.
"""

from __future__ import annotations

from collections.abc import Sequence

from mcp_server_guard.shell.strings.parsing import Word

DYNAMIC = object()  # a command string only known at run time
BUILT = object()  # one interpreter code builds from strings (``os.system('r' + x)``): only run time knows it
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


def after_options(rest: list[Word], short: str = "", long: Sequence[str] = (), skip: int = 0) -> Inner:
    """The command after a wrapper's options (``short`` letters and ``long`` names take a value), ``skip`` words on."""
    start = skip_options(rest, frozenset(short), frozenset(long)) + skip
    return [rest[start:]] if start < len(rest) else None


def string_of(word: Word | None) -> Inner:
    """An option's value as a command line: its text, DYNAMIC when only run time knows it, None when absent."""
    if word is None:
        return None
    return word.value if word.value is not None else DYNAMIC


def joined(words: Sequence[Word]) -> Inner:
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
                    return string_of(rest[i + 1] if i + 1 < len(rest) else None)
                if value.startswith(name + "="):
                    return value.partition("=")[2]
            elif value.startswith("-") and not value.startswith("--") and name[1] in value[1:]:
                attached = value[value.index(name[1], 1) + 1 :]
                if attached:
                    return attached
                return string_of(rest[i + 1] if i + 1 < len(rest) else None)
    return None


def all_values(words: Sequence[Word], names: Sequence[str]) -> list[Inner]:
    """Every value of the options ``names`` (``-x V``, ``-xV`` for one-letter ones, ``--name=V``)."""
    found: list[Inner] = []
    for i, word in enumerate(words):
        value = word.value
        if value is None:
            continue
        for name in names:
            if value == name:
                found.append(string_of(words[i + 1] if i + 1 < len(words) else None))
            elif name.startswith("--") and value.startswith(name + "="):
                found.append(value.partition("=")[2])
            elif len(name) == 2 and value.startswith(name) and len(value) > 2 and not value.startswith("--"):
                found.append(value[2:])
    return found


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
    return joined(remote)


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
    "micromamba": ("run",),
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
        return after_options(
            rest, "ugpCDrtUTh", ("user", "group", "prompt", "close-from", "chdir", "role", "type", "other-user")
        )
    if program in ("nice", "ionice"):
        return after_options(rest, "ncpt", ("adjustment", "class"))
    if program in _PLAIN_WRAPPERS:
        short, long = _PLAIN_WRAPPERS[program]
        return after_options(rest, short, long, skip=1 if program in _ONE_OPERAND else 0)
    if program == "setarch":
        if not rest or (rest[0].value or "-").startswith("-"):
            return None  # setarch --list
        start = 1 + skip_options(rest[1:], frozenset(), frozenset({"uname-2.6"}))
        return [rest[start:]] if start < len(rest) else None
    if program in ("timeout", "taskset"):
        return after_options(rest, "sk", ("signal", "kill-after"), skip=1)  # skip the duration / mask
    if program in ("strace", "ltrace"):
        return after_options(rest, "oepsuEPIbaXOSAnD", ("output", "trace", "signal", "status", "user", "env"))
    if program == "chroot":
        return after_options(rest, "", ("userspec", "groups"), skip=1)  # skip NEWROOT
    if program == "chrt":
        if any((w.value or "").startswith("-") and "p" in (w.value or "")[1:] for w in rest if w.value != "--"):
            return None  # chrt -p: changes a running process
        return after_options(rest, "TPD", ("sched-runtime", "sched-period", "sched-deadline"), skip=1)
    if program in ("prlimit", "unshare", "setpriv", "firejail", "systemd-run", "nsenter", "cgexec", "numactl"):
        return after_options(
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
    return _unwrap_given(program, rest)


def _unwrap_given(program: str, rest: list[Word]) -> Inner:
    """``unwrap`` for programs that run a command given another way than as their arguments: a string (flock -c,
    watch, trap, su -c), lines of input (xargs, parallel), an option (find -exec), another machine or a container
    (ssh, docker, kubectl), a runner's subcommand (npx, nix-shell --run, git bisect run, uvx)."""
    if program == "xargs":
        return _xargs(rest)
    if program == "flock":
        start = skip_options(rest, frozenset("wE"), frozenset({"timeout", "conflict-exit-code"}))
        tail = rest[start + 1 :]
        if tail and tail[0].value in ("-c", "--command"):
            return string_of(tail[1] if len(tail) > 1 else None)
        return [tail]
    if program == "watch":
        return joined(rest[skip_options(rest, frozenset("ndq"), frozenset({"interval", "differences"})) :])
    if program == "trap" and rest:
        start = 1 if rest[0].value == "--" else 0
        if any(w.value in ("-p", "-l", "-P") for w in rest[:1]):
            return None  # trap -p / -l only print
        return string_of(rest[start]) if start < len(rest) else None
    if program in ("find", "fd", "fdfind"):
        return _find_exec(rest)
    if program in ("su", "runuser", "sg"):
        code = _option_value(rest, ("--command", "-c"), anywhere=True)
        if code is not None or program != "sg":
            return code
        # `sg GROUP 'cmd'`: without -c its command is the operand after the group, run by /bin/sh (red team 20 F1).
        operands = [w for w in rest if not (w.value or "").startswith("-")]
        return joined(operands[1:]) if len(operands) > 1 else None
    if program == "cmake" and len(rest) > 3 and [w.value for w in rest[:2]] == ["-E", "chdir"]:
        return [rest[3:]]  # cmake -E chdir DIR CMD … (red team 21)
    if program == "sops" and len(rest) > 2 and rest[0].value in ("exec-env", "exec-file"):
        start = 1 + skip_options(rest[1:])
        return joined(rest[start + 1 :])  # sops exec-env FILE 'cmd': a command line for a shell
    if program == "entr":
        start = skip_options(rest)
        if any(w.value is not None and w.value.startswith("-") and "s" in w.value[1:] for w in rest[:start]):
            return string_of(rest[start]) if start < len(rest) else None  # entr -s 'cmd': run by $SHELL
        return [rest[start:]] if start < len(rest) else None
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
