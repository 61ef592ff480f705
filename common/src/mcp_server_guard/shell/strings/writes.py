"""Where a command line writes: its redirects, the files programs that write name (``cp … /bin/ls``, ``tee -a
~/.bashrc``, ``sed -i``, ``curl -o``, ``tar -C ~``), and the files it downloads.

Each check returns the findings it makes (a write to a disk or the kernel, to a file of the system or of a shell's
start-up, a redirect only run time places, any other redirect that writes a file); the expander (``expander``)
records them where the command is met, and judges a downloaded file that the same line runs. What a program writes
by other means (a path in its code, a file it opens itself) is not seen here: the box is the boundary.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass

from mcp_server_guard.shell.strings.commands import Finding, Redirect
from mcp_server_guard.shell.strings.matching import (
    BLOCK_DEVICE,
    RUN_TIME_ARG,
    Args,
    forms_of,
    normalize_path,
    parse_args,
    path_matches,
)

# Writing to these is writing to the kernel or to a disk, whatever the program.
DEVICE_WRITE_TARGETS = (BLOCK_DEVICE, "/proc/sysrq-trigger", "/proc/sys/**", "/sys/**")
# Writing these (by a redirect, tee or truncate) changes the machine or a shell's start-up: never an agent's call.
SYSTEM_FILES = (
    "/etc/**", "/boot/**", "/usr/**", "/bin/**", "/sbin/**", "/lib/**", "/lib64/**", "/lib32/**", "/root/**",
    "/var/lib/**", "/var/spool/**", "~/.bashrc", "~/.bash_profile", "~/.bash_login", "~/.bash_logout",
    "~/.bash_history", "~/.profile", "~/.zshrc", "~/.zshenv", "~/.zprofile", "~/.zlogin", "~/.ssh/**",
    "~/.config/autostart/**", "~/.config/systemd/**", "~/.gitconfig", "~/.config/git/**", "~/.local/bin/**",
    "~/.config/fish/**", "~/.bashrc.d/**", "~/.config/environment.d/**", "~/.local/lib/**", "~/.vimrc", "~/.vim/**",
    "~/.config/nvim/**", "~/.pythonrc", "~/.pythonstartup", "~/.config/pip/**", "~/.pip/**", "/opt/**",
)  # fmt: skip
# What a shell, a session or a desktop runs at start-up, by name (wherever a home directory is).
STARTUP_NAMES = frozenset(
    {".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile", ".zshrc", ".zshenv",
     ".zprofile", ".zlogin", ".kshrc", ".mkshrc", ".cshrc", ".tcshrc", ".login", ".xsessionrc", ".xprofile",
     ".xinitrc", ".inputrc", ".bash_history", ".gitconfig", ".npmrc", ".pam_environment", "authorized_keys"}
)  # fmt: skip
STARTUP_DIRS = frozenset({".bashrc.d", ".ssh", "autostart", "environment.d", "fish", ".zshrc.d"})
# Directories that hold such files, by name (wherever a home directory is): a tree made there fills them.
HOLDING_DIRS = frozenset({".config", ".local", ".local/bin", ".local/lib"})
# A fetch whose output a redirect saves: `curl -s URL > i.sh`.
_DOWNLOAD_REDIRECT = re.compile(r"\b(?:curl|wget|aria2c|http|fetch)\b[^|;&\n]*?>>?\s*['\"]?([^\s'\";&|]+)")


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
    "rsync": _Writes((), "last", into_home=True),
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
# Programs whose destination may become a whole tree (a copy of a directory, an archive's or a repository's files).
_TREES = frozenset({"cp", "mv", "ln", "rsync", "tar", "unzip", "git"})


def redirect_findings(redirects: Sequence[Redirect]) -> list[Finding]:
    """What the line's redirects write: a disk or the kernel, a file of the system or the shell, a place only run
    time knows, or any other file (writing to /dev/null, /dev/stdout or /dev/stderr is none of these)."""
    found: list[Finding] = []
    for redirect in redirects:
        target, shown = redirect.target.static, f"'{redirect.op} {redirect.target.raw}'"
        if redirect.writes and target is None:
            found.append(
                Finding("dynamic-redirect", f"redirect target {redirect.target.raw!r} is only known at run time")
            )
        elif redirect.writes and target is not None and _writes_device(target):
            found.append(Finding("device-write", f"{shown} writes to a disk or the kernel"))
        elif redirect.writes and target is not None and _system_file(target):
            found.append(Finding("system-write", f"{shown} writes a file of the system or the shell"))
        elif redirect.writes and target not in ("/dev/null", "/dev/stdout", "/dev/stderr"):
            found.append(Finding("write-redirect", f"{shown} writes a file"))
    return found


def destination_findings(program: str, argv: list[str], home: str, moved: bool = False) -> list[Finding]:
    """Threat: `cp /dev/zero /bin/ls`, `mv x /etc/passwd`, `tee -a ~/.bashrc`, `sed -i … ~/.bashrc`,
    `curl -o ~/.bashrc URL`, `tar xf x.tar -C ~`: a program writing a file of the system or of the shell's
    start-up (or extracting into the home directory itself, ``home`` spelled out), whatever the program."""
    if program == "git":
        return _clone_findings(argv, moved)
    spec = _WRITERS.get(program)
    if spec is None:
        return []
    found: list[Finding] = []
    parsed = parse_args(program, argv[1:], spec.values)
    destinations = [v for option in spec.options for v in parsed.values_of(option)]
    if spec.operands == "last" and not destinations and len(parsed.positionals) >= 2:
        destinations = parsed.positionals[-1:]
    elif spec.operands == "all" and (not spec.when or any(parsed.has(flag) for flag in spec.when)):
        scripted = any(parsed.values_of(option) for option in ("e", "expression", "f", "file"))
        destinations += parsed.positionals[0 if scripted else spec.skip :]  # sed's script is its first operand
    if program == "dd":
        destinations += [a.partition("=")[2] for a in argv[1:] if a.startswith("of=")]
    joined: list[str] = []
    if spec.operands == "last" and destinations and program in ("cp", "mv", "install", "ln"):
        # `cp -t ~ .bashrc`, `cp .bashrc ~`: a directory destination receives the sources by their names.
        sources = (
            parsed.positionals
            if parsed.values_of("t") or parsed.values_of("target-directory")
            else parsed.positionals[:-1]
        )
        joined = [
            posixpath.join(d, posixpath.basename(src))
            for d in list(destinations)
            for src in sources
            if RUN_TIME_ARG not in (src, d)
        ]
    for destination in [*destinations, *joined]:
        if destination == RUN_TIME_ARG:
            continue
        # (`cp -r dotfiles/. ~`: a source's contents, by the name ".", land in the home directory itself)
        if (spec.into_home or destination in joined) and normalize_path(destination) in ("~", home):
            found.append(Finding("system-write", f"{program} writes into the home directory itself ({destination})"))
        elif _system_file(destination) or (_tree_at(program, parsed, destination, joined)
                                           and _holds_system_files(destination, home)):  # fmt: skip
            found.append(
                Finding("system-write", f"{program} writes over {destination}, a file of the system or the shell")
            )
    return found


def _tree_at(program: str, parsed: Args, destination: str, joined: Sequence[str]) -> bool:
    """Whether ``program`` may make a whole tree at ``destination``: a tar, zip, rsync or a name a copy, move or link
    gives a source; the destination operand of ``cp``/``mv``/``ln`` itself only where it is no existing directory
    (no trailing ``/``; for ``cp`` a recursive copy): ``cp starship.toml ~/.config/`` writes one file."""
    if program not in _TREES:
        return False
    if program not in ("cp", "mv", "ln") or destination in joined:
        return True
    if destination.endswith("/"):
        return False
    return program != "cp" or any(parsed.has(flag) for flag in ("r", "R", "a", "recursive", "archive"))


def _holds_system_files(target: str, home: str) -> bool:
    """Whether a tree made at ``target`` would fill files of the system or a shell's start-up: ``target`` is a
    directory above one (``~/.config`` holds ``~/.config/autostart``, ``/usr/local`` is in ``/usr``), by place or —
    outside the project's relative paths — by name (``/home/u/.local``). Threat (red team 19 F7): ``git clone URL
    ~/.config``, ``cp -r dotfiles/.config ~/``, ``tar xf x.tar -C ~/.local``, ``ln -s $PWD/cfg ~/.config``. The home
    directory itself is judged where it is filled (``into_home``): ``cp notes.txt ~`` writes ``~/notes.txt``."""
    normal = normalize_path(target).rstrip("/") or "/"
    if normal in ("~", home, "/"):
        return False
    for pattern in SYSTEM_FILES:
        place = pattern.removesuffix("/**")
        if place.startswith(normal + "/"):
            return True
    if normal.startswith(("/", "~", "..")):
        parts = normal.split("/")
        return parts[-1] in HOLDING_DIRS or "/".join(parts[-2:]) in HOLDING_DIRS
    return False


def _clone_findings(argv: list[str], moved: bool = False) -> list[Finding]:
    """Threat: ``git clone URL ~/.ssh`` (or ``~/.config/git``, ``~/.local/bin``), ``git -C ~ clone URL .ssh``,
    ``git -C ~ clone https://host/.ssh``, ``cd ~ && git clone URL .ssh``, ``git --work-tree ~/.ssh clone …``: a
    repository's files become the user's keys, git config or programs. The directory a clone makes — the one named,
    or the one git names after the repository, or the work tree named — is judged as the files it fills, where git's
    ``-C`` puts it, or (``moved``: the line went to a place outside the project first) as if in the home directory
    (red team 12 F7, red team 19 F7)."""
    parsed = parse_args("git", argv[1:])
    if parsed.positionals[:1] != ["clone"] or len(parsed.positionals) < 2 or RUN_TIME_ARG in parsed.positionals[1:3]:
        return []
    target = parsed.positionals[2] if len(parsed.positionals) > 2 else _named_after(parsed.positionals[1])
    for place in reversed(parsed.values_of("C")):  # `git -C a -C b`: b is relative to a
        if not target or target.startswith(("/", "~")):
            break
        if place == RUN_TIME_ARG:
            return []
        target = posixpath.join(place, target)
    targets = [target, *(v for v in parsed.values_of("work-tree") if v != RUN_TIME_ARG)]
    if moved:
        targets += [posixpath.join("~", t) for t in targets if t and not t.startswith(("/", "~"))]
    for one in targets:
        if one and (_system_file(one) or _system_file(posixpath.join(one, "config")) or _holds_system_files(one, "")
                    or normalize_path(one).rstrip("/") == "~"):  # fmt: skip
            return [Finding("system-write", f"git clone fills {one}, a directory of the system or the shell")]
    return []


def _named_after(source: str) -> str:
    """The directory ``git clone SOURCE`` makes: the repository's last name, less ``.git`` (``host:x/.ssh.git``:
    ``.ssh``)."""
    name = source.rstrip("/").removesuffix("/.git").rstrip("/")
    name = name.rpartition("/")[2].rpartition(":")[2]
    return name.removesuffix(".git")


def downloaded_files(program: str, argv: list[str]) -> list[str]:
    """The files ``curl`` or ``wget`` saves what it downloads in, normalized (``-o i.sh``, ``-O``, wget's default)."""
    parsed = parse_args(program, argv[1:], _WRITERS[program].values)
    names = [v for option in _WRITERS[program].options for v in parsed.values_of(option)]
    remote = program == "wget" or parsed.has("O") or parsed.has("remote-name")
    if remote and not names:
        names = [posixpath.basename(u.split("?")[0]) for u in parsed.positionals if "/" in u]
    return [posixpath.normpath(n) for n in names if n and n not in (RUN_TIME_ARG, "-")]


def redirected_downloads(source: str) -> list[str]:
    """The files a fetch's output is redirected into, normalized (`curl -s URL > i.sh; bash i.sh`)."""
    return [posixpath.normpath(found.group(1)) for found in _DOWNLOAD_REDIRECT.finditer(source)]


def _system_file(target: str) -> bool:
    """A file of the system or of a shell's start-up: by place, or — outside the project's relative paths — by name
    (`/home/u/.bashrc`, `~root/.profile`, `../../.bashrc`)."""
    normal = normalize_path(target)
    if any(path_matches(normal, pattern) for pattern in SYSTEM_FILES):
        return True
    if normal.startswith(("/", "~", "..")):
        return posixpath.basename(normal) in STARTUP_NAMES or any(part in STARTUP_DIRS for part in normal.split("/"))
    return False


def _writes_device(target: str) -> bool:
    normal = normalize_path(target)
    return any(path_matches(form, p) for form in forms_of(normal) for p in DEVICE_WRITE_TARGETS)
