"""What a command reads on its standard input (a ``Feed``), and the program text a feed carries, judged.

A shell, an interpreter, ``eval``, ``sqlite3``, ``awk -f /dev/stdin``: many programs read the code they run from
their standard input. The feed says where that comes from — the tool call's ``stdin``, a background job's later
writes, a pipe, a here-document, a file — and the judges here decide what can be known of it: text in the line or
in the call is walked as the commands it is (a shell's script, a read loop's lines, a command language's shell
escapes), code piped in by another command or read from a file is a finding, and what reads the call's stdin as
code is remembered, so a job's later writes are judged too.

The judges reach the rest of the walk through ``Walk`` (the expander, ``expander``), which they are given; what
the commands of a line are, and what shells and interpreters run (``runners``), is not here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from mcp_server_guard.patterns import deferred
from mcp_server_guard.shell.strings.code_texts import program_text_runs
from mcp_server_guard.shell.strings.commands import Command, Word
from mcp_server_guard.shell.strings.matching import RUN_TIME_ARG, normalize_path, parse_args
from mcp_server_guard.shell.strings.wrappers import DYNAMIC, Inner


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
REMOTE = Feed("remote")  # the command runs in a container or on another host: its shell is not an escape here
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

# Programs whose command language, read from stdin, has a way to run a shell command.
STDIN_LANGUAGES = frozenset(
    {"sqlite3", "sqlite", "ed", "red", "gdb", "cgdb", "psql", "mysql", "mariadb", "sftp", "ftp", "lftp", "expect",
     "script", "tclsh", "wish", "dc", "duckdb", "gnuplot", "lldb", "smbclient", "octave", "maxima"}
)  # fmt: skip


def feed_of(command: Command, inherited: Feed) -> Feed:
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
FETCHES = deferred(
    r"(?:^|[|;&(`]|\$\(|<\()\s*(?:[^\s/|;&()`<]*/)*(?:curl|wget|fetch|aria2c|http|https|httpie|lynx|links|w3m|nc|ncat|"
    r"Invoke-WebRequest|iwr|irm)\b"
)


def reads_descriptor(operand: Word | None) -> str:
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


def process_substitution(word: Word) -> bool:
    """Is ``word`` a process substitution (``<(…)``, ``>(…)``): a file whose content another command prints?"""
    return word.value is None and word.raw.lstrip().startswith(("<(", ">("))


class Walk(Protocol):
    """The expander as the judges see it: where a finding goes, how a text or a command met on the way is walked in
    turn, and what reads the call's (or the job's) stdin as program text (``Verdict.stdin_code``)."""

    stdin_code: str

    def finding(self, kind: str, detail: str) -> None: ...

    def line(self, source: str, depth: int, feed: Feed = NO_FEED) -> None: ...

    def inner(self, program: str, inner: Inner, depth: int, feed: Feed) -> None: ...


def judge_program_text(walk: Walk, reader: str, feed: Feed, judge: Callable[[str], None], what: str) -> None:
    """A program reads its program text from ``feed``: judge that text with ``judge`` when it is known."""
    if feed.kind in ("call", "job"):
        walk.stdin_code = walk.stdin_code or reader
        if feed.text is not None:
            judge(feed.text)
    elif feed.kind == "text" and feed.text is not None:
        judge(feed.text)
    elif feed.kind == "dynamic":
        walk.finding("dynamic-shell-string", f"a here-document with expansions is run as {what}")
    elif feed.kind == "file":
        # Threat: `sh < notes.txt` runs whatever the file holds; what it holds is not in the line.
        walk.finding("script-from-data", f"{what} read from a file on stdin is run")
    elif feed.kind == "pipe":
        upstream = feed.upstream
        chain: list[str] = []
        while upstream is not None and len(chain) < 32:  # `curl … | base64 -d | bash`: any stage fetching
            chain.append(upstream.text)
            upstream = upstream.upstream
        upstream = feed.upstream
        judge_printed_code(walk, " | ".join(reversed(chain)), f"{what} piped in by another command is run")
        head = upstream.words[0].value if upstream is not None and upstream.words else None
        if upstream is not None and head in ("echo", "printf") and all(w.value for w in upstream.words[1:]):
            # `echo 'rm -rf ~' | sh`: the text is in the line; judge it too.
            judge(" ".join(w.value or "" for w in upstream.words[1:] if not (w.value or "").startswith("-")))


def judge_stdin_lines(walk: Walk, reader: str, feed: Feed, depth: int) -> None:
    """Threat: the call's stdin (or a job's later input) run as command lines by other means than a shell's own
    script: `eval "$(cat)"`, `while read -r l; do eval "$l"; done`, `$(cat)`, `read l; $l`, `os.system(input())`.
    Each write is judged as a script and, as a read loop runs it line by line (a quoted newline in one line
    starts a new command in the next eval), as each of its lines too, like the same lines given as commands."""
    if feed.kind not in ("call", "job"):
        return

    def judge(text: str) -> None:
        walk.line(text, depth + 1)
        lines = [one for one in text.splitlines() if one.strip()]
        # `read l` (no -r) drops the backslashes before eval sees the line: x=\`cmd\` runs cmd.
        unescaped = [u for u in (_unescaped(one) for one in lines) if u not in lines]
        for one in [*(lines if len(lines) > 1 else []), *unescaped]:
            walk.line(one, depth + 1)

    judge_program_text(walk, reader, feed, judge, "a shell script")


def judge_stdin_substitutions(walk: Walk, feed: Feed, depth: int) -> None:
    """Threat: bash evaluating what the line read as arithmetic or as a name (`read n; $((n))`, `(( $(cat) ))`,
    `printf -v "$l"`): an array subscript in it runs its `$(…)` and backticks whatever quotes or `#` surround
    them (`a['$(cmd)']`, `a[ #$(cmd)]`), and `read` without -r drops backslashes first. Every such span of the
    fed text (and of it unescaped) that bash would expand — inside a subscript (`a[…]`) or a compound assignment
    (`declare "$l"` given `x=($(cmd))`) — is judged as a command line; the rest is data (evaluated elsewhere, a
    `$(…)` is an arithmetic syntax error, not a command: a README with `` `sudo reboot` `` summed is not run)."""

    def judge(text: str) -> None:
        for variant in {text, _unescaped(text)}:
            for span in substitution_spans(variant, expanded_only=True):
                walk.line(span, depth + 1)

    judge_program_text(walk, "arithmetic", feed, judge, "arithmetic")


_BACKSLASH = deferred(r"\\(.)", re.DOTALL)  # `read` without -r: `\x` becomes `x`, backslash-newline nothing


def _unescaped(text: str) -> str:
    """``text`` as `read` without -r leaves it."""
    return _BACKSLASH.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def substitution_spans(text: str, *, expanded_only: bool = False) -> list[str]:
    """The command text of every `$(…)` and backtick span in ``text``, found the way an arithmetic subscript
    expands them: quotes, `#` and line ends do not hide them (`a['$(cmd)']` runs cmd). `$((…) )` is a command
    substitution of a subshell to bash when it does not read as arithmetic: every `$(` opens a span."""
    spans: list[str] = []
    i = 0
    opened, compound = -1, False  # the last `[` not closed yet; a `=(` seen
    while i < len(text):
        kept = not expanded_only or opened >= 0 or compound
        if text.startswith("$(", i):
            depth, j = 1, i + 2
            while j < len(text) and depth:
                depth += {"(": 1, ")": -1}.get(text[j], 0)
                j += 1
            if kept:
                spans.append(text[i + 2 : j - 1 if not depth else j])
            i = j
        elif text[i] == "`":
            end = text.find("`", i + 1)
            if kept:
                spans.append(text[i + 1 : end if end >= 0 else len(text)])
            i = end + 1 if end >= 0 else len(text)
        else:
            opened = i if text[i] == "[" else -1 if text[i] == "]" else opened
            compound = compound or text.startswith("=(", i)
            i += 1
    return [span for span in spans if span.strip()]


def judge_printed_code(walk: Walk, raw: str, detail: str) -> None:
    """Code that another command prints is run: from the network (curl, wget …) it is remote code."""
    if FETCHES.search(raw):
        walk.finding("remote-code", f"{detail}: code fetched from the network is run")
    else:
        walk.finding("pipe-to-shell", detail)


def judge_stdin_language(walk: Walk, program: str, rest: list[Word], depth: int, feed: Feed) -> None:
    """Threat: `sqlite3` fed `.shell …`, `ed` fed `!…`, `gdb` fed `shell …`, `script` fed a command line: programs
    whose own command language, read from stdin, runs shell commands. Those commands are judged; a job's
    writes too."""
    if program in ("script",):
        if any((w.value or "") in ("-c", "--command") or (w.value or "").startswith("--command=") for w in rest):
            return  # script -c CMD runs CMD (unwrap), not its stdin
        judge_program_text(walk, "shell", feed, lambda text: walk.line(text, depth + 1), "a shell script")
        return

    def judge(text: str) -> None:
        runs = program_text_runs(program, text)
        for inner in runs if runs is not None else [DYNAMIC]:
            if inner is not None:
                walk.inner(program, inner, depth, NO_FEED)

    judge_program_text(walk, f"lang:{program}", feed, judge, f"{program} commands")


def judge_code_files(walk: Walk, program: str, rest: list[Word], feed: Feed, depth: int = 0) -> None:
    """Threat: `awk -f /dev/stdin`, `make -f -`, `vim -E -s`, `gdb -x /dev/stdin`: a program loading code of its
    own language from stdin. This layer cannot read that code: undecidable (a job's writes too)."""
    if program in STDIN_LANGUAGES:
        judge_stdin_language(walk, program, rest, depth, feed)
        return
    options = CODE_FILE_OPTIONS.get(program)
    if options is None:
        return
    vim = program in ("vim", "nvim", "vi", "ex", "view", "vimdiff")
    values = options - {"s"} if vim else options  # vim's -s is a flag in Ex mode
    parsed = parse_args(program, [w.value if w.value is not None else RUN_TIME_ARG for w in rest], values)
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
            walk.finding("script-from-data", f"{program} runs code given on its standard input")
            return
        for inner in runs:
            if inner is not None:
                walk.inner(program, inner, depth, NO_FEED)

    judge_program_text(walk, f"opaque:{program}", feed, opaque, what)
