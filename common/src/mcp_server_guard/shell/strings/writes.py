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
from urllib.parse import urlsplit

from mcp_server_guard.patterns import deferred
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
from mcp_server_guard.shell.strings.outside import keeps_content, overwritten_outside, written_outside

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
    # what a session, a terminal multiplexer, an editor or the user's service manager runs (red team 20 F7)
    "~/.tmux.conf", "~/.config/tmux/**", "~/.cargo/env", "~/.local/share/applications/**",
    "~/.local/share/systemd/**", "~/.config/Code/User/**", "~/.config/uv/**", "~/.config/direnv/**",
    # configurations that name programs to run (red team 21)
    "~/.cargo/config", "~/.cargo/config.toml", "~/.curlrc", "~/.wgetrc", "~/.lesskey", "~/.config/lesskey",
    "~/.gnupg/gpg-agent.conf", "~/.gnupg/gpg.conf", "~/.mailcap", "~/.config/mimeapps.list", "~/.npmrc",
    "~/.config/containers/**", "~/.docker/config.json",
)  # fmt: skip
# What a shell, a session or a desktop runs at start-up, by name (wherever a home directory is).
STARTUP_NAMES = frozenset(
    {".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile", ".zshrc", ".zshenv",
     ".zprofile", ".zlogin", ".kshrc", ".mkshrc", ".cshrc", ".tcshrc", ".login", ".xsessionrc", ".xprofile",
     ".xinitrc", ".inputrc", ".bash_history", ".gitconfig", ".npmrc", ".pam_environment", "authorized_keys",
     ".zlogout", ".xsession", ".tmux.conf", ".vimrc", ".exrc"}
)  # fmt: skip
STARTUP_DIRS = frozenset({".bashrc.d", ".ssh", "autostart", "environment.d", "fish", ".zshrc.d"})
# Directories that hold such files, by name (wherever a home directory is): a tree made there fills them.
HOLDING_DIRS = frozenset({".config", ".local", ".local/bin", ".local/lib"})
# A fetch whose output a redirect saves: `curl -s URL > i.sh`.
_DOWNLOAD_REDIRECT = deferred(r"\b(?:curl|wget|aria2c|http|fetch)\b[^|;&\n]*?>>?\s*['\"]?([^\s'\";&|]+)")


@dataclass(frozen=True)
class Where:
    """Where a line's relative paths land: the home directory (what ``~`` names), the allowed directories, and every
    place the line's commands may be in (the project, each directory a ``cd``, ``pushd`` or ``env -C`` of the line
    names; ``unknown``: one only run time knows). Threat (red team 20 F7/F8): ``echo x >> /home/u/.vimrc``,
    ``cp -r nvim ../.config/nvim``, ``cd ~ && echo x >> .bashrc``, ``env -C ~ cp x .bashrc`` — a start-up file
    spelled from the home's absolute path, from the project, or after a change of directory."""

    home: str = ""
    roots: tuple[str, ...] = ()
    places: tuple[str, ...] = ()
    unknown: bool = False

    def spellings(self, target: str, inside: bool = False) -> list[str]:
        """``target`` as written and, for each place it may land, as the home-relative (``~/…``) or absolute path
        it names there — not where that is inside an allowed directory (the project's own ``.bashrc``), unless
        ``inside``."""
        pwd = target == "~+" or target.startswith("~+/")  # $PWD
        normal = normalize_path("." + target[2:] if pwd else target)
        if normal == RUN_TIME_ARG or not normal:
            return [target]
        out = [target]
        if normal == "~" or normal.startswith("~/"):
            absolute = [self.home + normal[1:]] if self.home else []
        elif normal.startswith("/"):
            absolute = [normal]
        elif normal.startswith("~"):
            # ~user/…: another user's home holds the same start-up files (~-, the previous directory: by name)
            user, slash, rest = normal.partition("/")
            return [target, "~/" + rest] if slash and user != "~-" else out
        else:
            absolute = [posixpath.normpath(posixpath.join(place, normal)) for place in self.places]
        for path in absolute:
            if not inside and any(path == root or path.startswith(root.rstrip("/") + "/") for root in self.roots):
                continue
            home = self.home.rstrip("/")
            out.append("~" + path[len(home) :] if home and (path == home or path.startswith(home + "/")) else path)
        return out

    def inside(self, target: str) -> bool:
        """Whether ``target``, spelled from ``/`` or ``~``, lies in an allowed directory (with the home allowed,
        ``~/c2/.config`` is the project's own): there it is judged by place, never by name."""
        normal = normalize_path(target)
        if (normal == "~" or normal.startswith("~/")) and self.home:
            normal = self.home.rstrip("/") + normal[1:]
        return normal.startswith("/") and any(
            normal == root or normal.startswith(root.rstrip("/") + "/") for root in self.roots
        )

    def by_name(self, target: str) -> bool:
        """Whether a relative ``target`` may land somewhere only run time knows (a ``cd "$d"``, ``cd -``): then it is
        judged by its name, as a path outside the project is."""
        normal = normalize_path(target)
        return self.unknown and not normal.startswith(("/", "~"))


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


# Every option of curl's and wget's that names a file they write (red team 21: `curl --trace ~/.profile URL`, a header
# dump, a cookie jar, a log), as written and in curl's `--expand-…` form (the value's {{variables}} filled in).
_CURL_OUT = ("o", "output", "output-dir", "D", "dump-header", "c", "cookie-jar", "trace", "trace-ascii", "stderr",
             "libcurl", "etag-save", "hsts", "alt-svc", "ssl-sessions")  # fmt: skip
_CURL_WRITES = frozenset({*_CURL_OUT, *(f"expand-{o}" for o in _CURL_OUT if len(o) > 1)})
_CURL_VALUES = frozenset({"d", "data", "data-binary", "data-raw", "data-urlencode", "json", "H", "header", "X",
                          "request", "u", "user", "A", "user-agent", "e", "referer", "b", "cookie", "F", "form", "T",
                          "upload-file", "x", "proxy", "m", "max-time", "w", "write-out", "r", "range", "K", "config",
                          "E", "cert", "key", "cacert", "url", "resolve", "connect-to", "variable", "Y", "y", "z",
                          "time-cond", "netrc-file", "unix-socket", "retry", "connect-timeout",
                          "expand-write-out"})  # fmt: skip
_PIP_WRITES = frozenset({"log", "log-file", "d", "dest", "w", "wheel-dir", "report"})
_PIP_VALUES = frozenset({"r", "requirement", "c", "constraint", "i", "index-url", "t", "target", "python"})
_WGET_VALUES = frozenset({"e", "execute", "i", "input-file", "U", "user-agent", "header", "t", "tries", "T"})
_WGET_WRITES = frozenset({"O", "output-document", "P", "directory-prefix", "o", "output-file", "a", "append-output",
                          "save-cookies", "warc-file", "rejected-log", "hsts-file"})  # fmt: skip
# curl's `--write-out` may send its output to a file: `%output{~/.bashrc}`, `%output{>>~/.bashrc}` (curl 8.3).
_WRITE_OUT_FILE = deferred(r"%output\{>?>?([^}]*)\}")
# Variables whose value is a file a program writes or appends to (a TLS key log, pip's log, a REPL's history): a
# start-up file named there is written as by a redirect (red team 21: `SSLKEYLOGFILE=~/.bashrc curl …`).
FILE_VARIABLES = frozenset({"SSLKEYLOGFILE", "GNUTLS_KEYLOGFILE", "PIP_LOG", "PIP_LOG_FILE", "PIP_REPORT",
                            "KRB5CCNAME", "LESSHISTFILE", "NODE_REPL_HISTORY", "SQLITE_HISTORY", "MYSQL_HISTFILE",
                            "PSQL_HISTORY", "REDISCLI_HISTFILE", "PYTHON_HISTORY", "HISTFILE", "LD_DEBUG_OUTPUT",
                            "GIT_TRACE", "GIT_TRACE2", "GIT_TRACE2_EVENT", "GIT_TRACE2_PERF", "GIT_TRACE_PACKET",
                            "GIT_TRACE_PACKFILE", "GIT_TRACE_PERFORMANCE", "GIT_TRACE_SETUP", "GIT_TRACE_CURL",
                            "GIT_TRACE_SHALLOW"})  # fmt: skip


def variable_findings(name: str, value: str | None, where: Where) -> list[Finding]:
    """A variable naming a file a program writes (``FILE_VARIABLES``), set to a file of the system or the shell."""
    value = value.removeprefix("FILE:") if value else value  # (KRB5CCNAME=FILE:/path)
    if name not in FILE_VARIABLES or not value or value == RUN_TIME_ARG or not system_target(value, where):
        return []
    return [Finding("system-write", f"{name} names {value}, a file of the system or the shell, for a program to write")]


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
    "curl": _Writes(tuple(sorted(_CURL_WRITES)), values=_CURL_WRITES | _CURL_VALUES),
    "wget": _Writes(tuple(sorted(_WGET_WRITES)), values=_WGET_WRITES | _WGET_VALUES),
    "tar": _Writes(("C", "directory"), values=frozenset({"C", "directory", "f", "file"}), into_home=True),
    "sort": _Writes(("o", "output"), values=frozenset({"o", "output", "k", "t", "S", "T"})),
    "openssl": _Writes(("out",), values=frozenset({"out", "in", "k", "pass", "passin", "passout"})),
    "gpg": _Writes(("o", "output"), values=frozenset({"o", "output", "r", "recipient", "u", "local-user"})),
    "xxd": _Writes((), "last", values=frozenset({"c", "g", "l", "s", "o", "n"})),
    "split": _Writes((), "last", values=frozenset({"a", "b", "C", "l", "n", "t"})),
    "unzip": _Writes(("d",), values=frozenset({"d"}), into_home=True),
    # (red team 20 F9)
    "bsdtar": _Writes(("C", "directory"), values=frozenset({"C", "directory", "f", "file"}), into_home=True),
    "iconv": _Writes(("o", "output"), values=frozenset({"o", "output", "f", "from-code", "t", "to-code"})),
    "uniq": _Writes((), "last", values=frozenset({"f", "s", "w", "skip-fields", "skip-chars", "check-chars"})),
    "sqlite3": _Writes((), "all", values=frozenset({"cmd", "init", "separator", "newline", "nullvalue"})),
    "script": _Writes((), "all", values=frozenset({"c", "command", "t", "timing", "T", "log-timing", "I", "O",
                                                    "B", "log-in", "log-out", "log-io", "m", "logging-format"})),
    "ssh-keygen": _Writes(("f",), values=frozenset({"f", "t", "b", "C", "N", "P", "Z", "a", "O", "n", "I", "V",
                                                     "s", "z", "m", "E"})),
    "cpio": _Writes(("D", "directory"), values=frozenset({"D", "directory", "F", "file", "E", "pattern-file", "H",
                                                          "format", "R", "owner", "I", "O"}), into_home=True),
    "patch": _Writes(("o", "output", "d", "directory"), "all",
                     values=frozenset({"o", "output", "p", "i", "input", "d", "directory", "r", "reject-file", "B",
                                       "prefix", "z", "suffix", "F", "fuzz", "D", "ifdef"}), into_home=True),
    "dpkg-deb": _Writes((), "last", values=frozenset({"Z", "z", "S"}), into_home=True),
    "ex": _Writes((), "all", values=frozenset({"c", "S", "s", "u", "T", "i", "w", "W"})),
    # (red team 21)
    "scp": _Writes(("t",), "last", values=frozenset({"c", "D", "F", "i", "J", "l", "o", "P", "S", "X"})),
    "dos2unix": _Writes(("n", "newfile"), "all"),
    "unix2dos": _Writes(("n", "newfile"), "all"),
    "touch": _Writes((), "all", values=frozenset({"d", "date", "r", "reference", "t"})),
    "zstd": _Writes(("o",), values=frozenset({"o", "D", "T", "B"})),
    "journalctl": _Writes(("cursor-file", "output-fields"), values=frozenset({"cursor-file"})),
    # (`pip download -d DIR`, `pip wheel -w DIR`: the directory it fills)
    "pip": _Writes(tuple(sorted(_PIP_WRITES)), values=_PIP_WRITES | _PIP_VALUES),
}  # fmt: skip
_WRITERS["vim"] = _WRITERS["nvim"] = _WRITERS["vi"] = _WRITERS["ex"]
_WRITERS["pip3"] = _WRITERS["pip"]
# (red team 21) gawk's in-place edit, `-i inplace` (an include that rewrites each file operand): awk may be gawk.
_WRITERS["gawk"] = _WRITERS["awk"] = _Writes(
    (), "all", 1, ("i", "include"),
    frozenset({"i", "include", "f", "file", "v", "assign", "F", "field-separator", "e", "source", "E", "exec", "l",
               "load", "W"}),
)  # fmt: skip
_AWK_IN_PLACE = frozenset({"inplace", "inplace.awk"})
# (red team 21) Programs that replace each file operand by its (de)compressed form, named after it: `gunzip
# ~/.bashrc.gz` writes ~/.bashrc, `gzip ~/.profile` takes it away.
_SQUEEZERS = frozenset({"gzip", "gunzip", "pigz", "unpigz", "xz", "unxz", "lzma", "unlzma", "bzip2", "bunzip2",
                        "lzip", "zstd", "unzstd", "lz4", "brotli"})  # fmt: skip
_SQUEEZER_READS = ("c", "stdout", "to-stdout", "t", "test", "l", "list", "h", "help", "V", "version")
_SQUEEZER_VALUES = frozenset({"S", "suffix", "T", "threads", "o", "b", "B", "F", "format", "C", "check", "M",
                              "memlimit", "D", "L", "level"})  # fmt: skip

# Programs whose destination may become a whole tree (a copy of a directory, an archive's or a repository's files).
_TREES = frozenset({"cp", "mv", "ln", "rsync", "tar", "bsdtar", "unzip", "cpio", "patch", "dpkg-deb", "curl", "git"})


def redirect_findings(redirects: Sequence[Redirect], where: Where = Where()) -> list[Finding]:
    """What the line's redirects write: a disk or the kernel, a file of the system or the shell (``where`` its
    relative paths land), a place only run time knows, or any other file (writing to /dev/null, /dev/stdout or
    /dev/stderr is none of these)."""
    found: list[Finding] = []
    for redirect in redirects:
        target, shown = redirect.target.static, f"'{redirect.op} {redirect.target.raw}'"
        if redirect.writes and target is None:
            found.append(
                Finding("dynamic-redirect", f"redirect target {redirect.target.raw!r} is only known at run time")
            )
        elif redirect.writes and target is not None and _writes_device(target):
            found.append(Finding("device-write", f"{shown} writes to a disk or the kernel"))
        elif redirect.writes and target is not None and system_target(target, where):
            found.append(Finding("system-write", f"{shown} writes a file of the system or the shell"))
        elif redirect.writes and target not in ("/dev/null", "/dev/stdout", "/dev/stderr"):
            found.append(Finding("write-redirect", f"{shown} writes a file"))  # (a read-only list refuses it)
            if overwritten_outside(redirect.op, target, where.spellings, where.home):
                found.append(Finding("write-outside", f"{shown} writes a file outside the allowed directories"))
    return found


def destination_findings(program: str, argv: list[str], where: Where, moved: bool = False) -> list[Finding]:
    """Threat: `cp /dev/zero /bin/ls`, `mv x /etc/passwd`, `tee -a ~/.bashrc`, `sed -i … ~/.bashrc`,
    `curl -o ~/.bashrc URL`, `tar xf x.tar -C ~`: a program writing a file of the system or of the shell's
    start-up (or extracting into the home directory itself, ``home`` spelled out), whatever the program."""
    if program == "git":
        return _clone_findings(argv, where, moved)
    home = where.home
    anywhere = _extracts_anywhere(program, argv)
    if anywhere:
        return [Finding("system-write", f"{program} {anywhere}: its files may land anywhere")]
    other = _extract_destinations(program, argv)
    if other is not None:
        return _filled([d for d in other if d != RUN_TIME_ARG], where, moved, program)
    spec = _WRITERS.get(program, _Writes(values=_SQUEEZER_VALUES) if program in _SQUEEZERS else None)
    if spec is None:
        return []
    found: list[Finding] = []
    argv = _dashed(argv) if program in ("tar", "bsdtar") else argv
    parsed = parse_args(program, argv[1:], spec.values)
    destinations = [v for option in spec.options for v in parsed.values_of(option)]
    if program in ("curl", "wget"):
        destinations = _fetched_into(program, parsed, destinations)
    if program in _SQUEEZERS and not any(parsed.has(flag) for flag in _SQUEEZER_READS):
        destinations += [named for operand in parsed.positionals for named in _squeezed(operand)]
    if spec.operands == "last" and not destinations and len(parsed.positionals) >= 2:
        destinations = parsed.positionals[-1:]
    elif spec.operands == "all" and (not spec.when or any(parsed.has(flag) for flag in spec.when)):
        scripted = any(parsed.values_of(option) for option in ("e", "expression", "f", "file", "source"))
        if program not in ("awk", "gawk") or _AWK_IN_PLACE & {*parsed.values_of("i"), *parsed.values_of("include")}:
            destinations += parsed.positionals[0 if scripted else spec.skip :]  # sed's script is its first operand
    if program == "dd":
        destinations += [a.partition("=")[2] for a in argv[1:] if a.startswith("of=")]
    if program in ("tar", "bsdtar") and not _extracts(program, parsed):
        # Creating: -C is where the files are read from (`tar czf d.tgz -C ~ notes.txt`); the archive is written
        destinations = [v for option in ("f", "file") for v in parsed.values_of(option) if v != "-"]
    if program in ("tar", "unzip") and not destinations and _extracts(program, parsed):
        destinations = ["."]  # into the directory the command is in (`cd ~/.config && tar xf x.tar`)
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
    if program in ("cp", "mv") and (parsed.has("T") or parsed.has("no-target-directory")):
        joined += destinations  # `cp -rT dotfiles ~`: the destination is the copy itself, not a directory it enters
    for destination in dict.fromkeys([*destinations, *joined]):
        if destination == RUN_TIME_ARG:
            continue
        # (`cp -r dotfiles/. ~`: a source's contents, by the name ".", land in the home directory itself)
        spelled = [] if where.inside(destination) else where.spellings(destination)
        if not spelled and _tree_at(program, parsed, destination, joined) and _by_place(destination):
            found.append(
                Finding("system-write", f"{program} fills {destination}, a directory of the system or the shell")
            )
            continue
        if (spec.into_home or destination in joined) and any(normalize_path(one) in ("~", home) for one in spelled):
            found.append(Finding("system-write", f"{program} writes into the home directory itself ({destination})"))
        elif system_target(destination, where) or (_tree_at(program, parsed, destination, joined) and any(
                _holds_system_files(one, home) for one in spelled)):  # fmt: skip
            found.append(
                Finding("system-write", f"{program} writes over {destination}, a file of the system or the shell")
            )
        elif written_outside(spelled, home) and not keeps_content(program, parsed):
            found.append(Finding("write-outside", f"{program} writes {destination}, outside the allowed directories"))
    return found


def _fetched_into(program: str, parsed: Args, named: list[str]) -> list[str]:
    """The files curl or wget writes (``named``: by their options), and those named after their URL (red team 47:
    ``curl --output-dir ~ -O URL/.bashrc``, ``cd ~ && wget URL/.bash_login``); curl's `--write-out` file, wget's
    ``-e`` commands; ``{{HOME}}`` as curl fills it in (``--variable %HOME --expand-output '{{HOME}}/.bashrc'``)."""
    out = list(named)
    urls = [a for a in parsed.positionals if re.match(r"[A-Za-z][\w+.-]*://", a)]
    if program == "curl":
        for text in (*parsed.values_of("w"), *parsed.values_of("write-out"), *parsed.values_of("expand-write-out")):
            out += [t for t in _WRITE_OUT_FILE.findall(text) if t and not text.startswith("@")]
        by_url = parsed.has("O") or parsed.has("remote-name") or parsed.has("remote-name-all")
        into = [*parsed.values_of("output-dir"), *parsed.values_of("expand-output-dir")] or ["."]
        if into != ["."]:  # `--output-dir ~ -o .bashrc`: the name is the directory's
            names = [*parsed.values_of("o"), *parsed.values_of("output"), *parsed.values_of("expand-output")]
            out += [posixpath.join(d, name) for d in into for name in names if not name.startswith(("/", "~"))]
        # `--variable f=~/.bashrc --expand-output '{{f}}'`: curl's own variables, filled in
        known = {"HOME": "~"}
        for variable in parsed.values_of("variable"):
            name, eq, value = variable.partition("=")
            if eq and not name.startswith("%"):
                known[name] = value
        out = [re.sub(r"\{\{(\w+)(?::[^}]*)?\}\}", lambda m: known.get(m.group(1), m.group(0)), d) for d in out]
    else:
        given = (*parsed.values_of("e"), *parsed.values_of("execute"))
        commands = [(key.replace("_", "").lower(), value) for c in given
                    for key, _, value in (c.replace(" ", "").partition("="),)]  # fmt: skip
        out += [value for key, value in commands if key in _WGETRC_WRITES and value]
        prefixes = [value for key, value in commands if key in ("dirprefix", "directoryprefix")]
        by_url = not (parsed.values_of("O") or parsed.values_of("output-document"))
        into = [*parsed.values_of("P"), *parsed.values_of("directory-prefix"), *prefixes] or ["."]
    if by_url:
        names = [posixpath.basename(urlsplit(url).path) for url in urls]
        out += [posixpath.join(d, name) for d in into for name in names if name and name not in (".", "..")]
    return [re.sub(r"\{\{HOME(?::[^}]*)?\}\}", "~", d) for d in out]


_WGETRC_WRITES = frozenset({"outputdocument", "logfile", "savecookies", "hstsfile", "warcfile", "rejectedlog"})


def _squeezed(operand: str) -> list[str]:
    """The files a (de)compressor's operand names: itself (replaced) and the name less its suffix (written)."""
    if operand in (RUN_TIME_ARG, "-"):
        return []
    stem, dot, suffix = operand.rpartition(".")
    return [operand, stem] if dot and stem and "/" not in suffix else [operand]


def _config_file(argv: list[str]) -> list[str]:
    """(red team 21) ``git config --file ~/.bashrc a.b c``: git writes the file it is given, whatever file it is
    (a query — ``--get``, ``--list``, ``get``, one key alone — only reads it)."""
    at = argv.index("config")
    parsed = parse_args("git", argv[at + 1 :], frozenset({"f", "file", "blob", "type", "default", "comment"}))
    files = [f for f in (*parsed.values_of("f"), *parsed.values_of("file")) if f != RUN_TIME_ARG]
    reads = ("get", "get-all", "get-regexp", "get-urlmatch", "get-color", "get-colorbool", "list", "l")
    writes = ("add", "unset", "unset-all", "replace-all", "rename-section", "remove-section", "edit", "e")
    if any(parsed.has(flag) for flag in reads) or parsed.positionals[:1] in (["get"], ["list"]):
        return []
    if len(parsed.positionals) == 1 and not any(parsed.has(flag) for flag in writes):
        return []
    return files


def _dashed(argv: list[str]) -> list[str]:
    """tar's old-style bundled options as the dashed ones they are: `tar czf out.tgz …` is `tar -czf out.tgz …`."""
    if len(argv) > 1 and re.fullmatch(r"[A-Za-z]*[cxtruA][A-Za-z]*", argv[1]):
        return [argv[0], "-" + argv[1], *argv[2:]]
    return argv


def _extracts_anywhere(program: str, argv: list[str]) -> str:
    """How an extraction keeps its members' absolute or ``../`` names (``tar -P``, ``unzip -:``): then they land
    wherever the archive says (red team 20 F9); "" otherwise."""
    if program in ("tar", "bsdtar"):
        argv = _dashed(argv)
        parsed = parse_args(program, argv[1:], _WRITERS["tar"].values)
        if _extracts(program, parsed) and (parsed.has("P") or parsed.has("absolute-names")):
            return "keeps absolute member names (-P)"
    if program == "unzip" and any(a == "-:" or (a.startswith("-") and ":" in a and not a.startswith("--"))
                                  for a in argv[1:]):  # fmt: skip
        return "keeps ../ in member names (-:)"
    return ""


def _extract_destinations(program: str, argv: list[str]) -> list[str] | None:
    """Where extractors no table above reads put a tree: ``7z x -oDIR``, ``dpkg -x DEB DIR``, ``python3 -m zipfile
    -e ARCHIVE DIR`` (``tarfile`` too); None for other programs."""
    args = argv[1:]
    if program in ("7z", "7za", "7zz"):
        return [a[2:] for a in args if a.startswith("-o") and len(a) > 2] if args[:1] in (["x"], ["e"]) else []
    if program == "dpkg":
        parsed = parse_args(program, args)
        extracting = any(parsed.has(f) for f in ("x", "X", "extract", "vextract"))
        return parsed.positionals[-1:] if extracting and len(parsed.positionals) >= 2 else []
    if re.fullmatch(r"python[\d.]*", program) and len(args) >= 4 and args[:2] in (["-m", "zipfile"], ["-m", "tarfile"]):
        return args[-1:] if any(a in ("-e", "--extract") for a in args[2:]) else []
    # A virtual environment made over a directory (its bin/ on PATH: `uv venv ~/.local`, red team 21)
    if re.fullmatch(r"python[\d.]*", program) and args[:2] == ["-m", "venv"]:
        return [a for a in args[2:] if not a.startswith("-")][-1:]
    if (program == "uv" and args[:1] == ["venv"]) or program == "virtualenv":
        return [a for a in (args[1:] if program == "uv" else args) if not a.startswith("-")][-1:]
    return None


def _extracts(program: str, parsed: Args) -> bool:
    """Whether ``tar`` extracts (``x``, ``--extract``, ``--get``) or
    ``unzip`` does (unless it only lists or tests: ``-l``, ``-t``, ``-v``, ``-Z``, ``-p``, ``-c``)."""
    if program == "unzip":
        return not any(parsed.has(flag) for flag in ("l", "t", "v", "Z", "p", "c"))
    return parsed.has("x") or parsed.has("extract") or parsed.has("get")  # (old-style bundles: ``_dashed``)


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
        if place.startswith(normal + "/") or (place == normal and pattern.endswith("/**")):
            return True
    if normal.startswith(("/", "~", "..")):
        parts = normal.split("/")
        return parts[-1] in HOLDING_DIRS or "/".join(parts[-2:]) in HOLDING_DIRS
    return False


def _clone_findings(argv: list[str], where: Where, moved: bool = False) -> list[Finding]:
    """Threat: ``git clone URL ~/.ssh`` (or ``~/.config/git``, ``~/.local/bin``), ``git -C ~ clone URL .ssh``,
    ``git -C ~ clone https://host/.ssh``, ``cd ~ && git clone URL .ssh``, ``git --work-tree ~/.ssh clone …``: a
    repository's files become the user's keys, git config or programs. The directory a clone makes — the one named,
    or the one git names after the repository, or the work tree named — is judged as the files it fills, where git's
    ``-C`` puts it, or (``moved``: the line went to a place outside the project first) as if in the home directory
    (red team 12 F7, red team 19 F7)."""
    parsed = parse_args("git", argv[1:])
    sub = parsed.positionals[:1]
    # Other ways to fill a directory with a repository's files (red team 20 F9): `git init DIR`, `git worktree add
    # DIR`, `--separate-git-dir DIR`, `git --work-tree DIR checkout …`, `git apply --directory=DIR`.
    made = [*parsed.values_of("separate-git-dir"), *parsed.values_of("work-tree"), *parsed.values_of("directory")]
    if sub == ["init"]:
        made += parsed.positionals[1:2]
    elif sub == ["worktree"] and parsed.positionals[1:2] == ["add"]:
        made += parsed.positionals[2:3]
    made = [m for m in made if m != RUN_TIME_ARG]
    if sub == ["config"] and (configs := _config_file(argv)):
        return _config_findings(configs, where)
    if sub != ["clone"] or len(parsed.positionals) < 2 or RUN_TIME_ARG in parsed.positionals[1:3]:
        return _filled(made, where, moved, "git") if made else []
    target = parsed.positionals[2] if len(parsed.positionals) > 2 else _named_after(parsed.positionals[1])
    for place in reversed(parsed.values_of("C")):  # `git -C a -C b`: b is relative to a
        if not target or target.startswith(("/", "~")):
            break
        if place == RUN_TIME_ARG:
            return []
        target = posixpath.join(place, target)
    return _filled([target, *made], where, moved, "git clone")


def _config_findings(files: list[str], where: Where) -> list[Finding]:
    return [
        Finding("system-write", f"git config writes {one}, a file of the system or the shell")
        for one in files
        if system_target(one, where)
    ][:1]


def _filled(targets: list[str], where: Where, moved: bool, what: str) -> list[Finding]:
    """A finding where one of the directories ``what`` fills is or holds files of the system or a shell's start-up
    (``moved``: the line went outside the project first, so a relative one may be in the home directory)."""
    if moved:
        targets = [*targets, *(posixpath.join("~", t) for t in targets if t and not t.startswith(("/", "~")))]
    for one in targets:
        if one and where.inside(one):
            if _by_place(one):  # (the home allowed: `git clone URL ~/.ssh` is still a place of the shell's)
                return [Finding("system-write", f"{what} fills {one}, a directory of the system or the shell")]
            continue
        for spelled in where.spellings(one) if one else []:
            if (_system_file(spelled) or _system_file(posixpath.join(spelled, "config"))
                    or _holds_system_files(spelled, "") or normalize_path(spelled).rstrip("/") == "~"):  # fmt: skip
                return [Finding("system-write", f"{what} fills {one}, a directory of the system or the shell")]
    return []


def _by_place(target: str) -> bool:
    """Whether a directory filled at ``target`` is, or holds, a place of SYSTEM_FILES (names aside)."""
    normal = normalize_path(target).rstrip("/") or "/"
    if any(path_matches(form, pattern) for form in (normal, normal + "/config") for pattern in SYSTEM_FILES):
        return True
    return any(
        pattern.removesuffix("/**").startswith(normal + "/")
        or (pattern.endswith("/**") and pattern.removesuffix("/**") == normal)
        for pattern in SYSTEM_FILES
    )


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


def system_target(target: str, where: Where) -> bool:
    """``_system_file`` of ``target`` as written or as it lands (``Where.spellings``), or by name where it may land
    somewhere only run time knows."""
    for one in where.spellings(target, inside=True):
        if where.inside(one):
            # the project's own file (`cp ~/.bashrc /home/u/proj/bashrc.bak`; with the home allowed, `~/c2/.config`):
            # by place only — `~/.ssh/id_rsa` is still the shell's
            if any(path_matches(normalize_path(one), pattern) for pattern in SYSTEM_FILES):
                return True
        elif _system_file(one):
            return True
    if where.by_name(target):
        normal = normalize_path(target)
        return posixpath.basename(normal) in STARTUP_NAMES or any(part in STARTUP_DIRS for part in normal.split("/"))
    return False


def _writes_device(target: str) -> bool:
    normal = normalize_path(target)
    return any(path_matches(form, p) for form in forms_of(normal) for p in DEVICE_WRITE_TARGETS)
