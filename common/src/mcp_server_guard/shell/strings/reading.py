"""Which command lines only read: those run on a read-only view of the project instead of a copy.

A line whose every command (wrappers and shell strings looked through, see ``expander``) is a program that only
reads — ``ls``, ``cat``, ``grep``, ``git status`` … used without an option that writes — and whose redirects
write nothing but ``/dev/null``, is run in the box with every root read-only: there is no copy to mount, read,
judge and remove, which is most of what a short boxed call costs.

This choice is made from the line's spelling, and like every string check it is advisory: it decides only
*how* the command is confined, never whether it may write. Where it is wrong (a program that writes after all: a
git hook, ``LD_PRELOAD``), the kernel refuses the write (``EROFS``) and nothing reaches the files; the result says
the command ran read-only. Anything this module does not know is not reading: the command works on a copy.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence

from mcp_server_guard.shell.strings.commands import Redirect
from mcp_server_guard.shell.strings.matching import RUN_TIME_ARG, system_program

# A redirect that writes only to one of these writes nothing a call could leave behind.
_SAFE_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_READING_REDIRECTS = frozenset({"<", "<<", "<<-", "<<<"})


def _any_args(_args: Sequence[str]) -> bool:
    return True


def _none_starting(*prefixes: str) -> Callable[[Sequence[str]], bool]:
    """No argument starts with one of ``prefixes`` (an option that writes a file, or runs a program)."""
    return lambda args: not any(arg.startswith(prefixes) for arg in args)


def _short_options_without(letter: str, *long: str) -> Callable[[Sequence[str]], bool]:
    """Neither the short option ``letter`` (alone or in a cluster such as ``-rno``) nor a long option in ``long``
    (or a prefix of one: ``--out``)."""

    def check(args: Sequence[str]) -> bool:
        for arg in args:
            if arg == "--":
                return True
            name = arg.partition("=")[0]
            if name.startswith("--"):
                if any(option.startswith(name) for option in long):
                    return False
            elif name.startswith("-") and letter in name[1:]:
                return False
        return True

    return check


# git subcommands that read the repository; git's own options before them (``-c``, ``-C``, ``--git-dir``) are not
# read here, so a line with any is not reading.
_GIT_READS = frozenset({"status", "log", "diff", "show", "rev-parse", "ls-files", "blame", "describe", "shortlog"})


def _git(args: Sequence[str]) -> bool:
    return bool(args) and args[0] in _GIT_READS and not any(arg.startswith(("--output", "-o")) for arg in args[1:])


# Programs (and builtins) that read and print, with what their arguments must not hold.
_ANY_ARGUMENTS = (
    "echo", "printf", "true", "false", "pwd", "cd", "test", "[", ":", "ls", "cat", "head", "tail", "wc", "grep",
    "egrep", "fgrep", "rg", "stat", "du", "df", "which", "basename", "dirname", "realpath", "readlink", "whoami", "id",
    "uname", "nproc", "seq", "sleep", "tr", "cut", "nl", "tac", "rev", "diff", "cmp", "comm", "md5sum", "sha1sum",
    "sha256sum", "sha512sum", "b2sum", "cksum", "od", "hexdump", "column", "jq", "date", "printenv",
)  # fmt: skip
_PROGRAMS: dict[str, Callable[[Sequence[str]], bool]] = {
    **dict.fromkeys(_ANY_ARGUMENTS, _any_args),
    "file": _short_options_without("C", "--compile"),
    "tree": _short_options_without("o", "--output"),
    "sort": _short_options_without("o", "--output"),
    "uniq": lambda args: len([a for a in args if not a.startswith("-")]) <= 1,  # `uniq IN OUT` writes OUT
    "env": lambda args: not args,  # with arguments it runs a program
    "find": _none_starting("-delete", "-exec", "-ok", "-fprint", "-fls"),
    "git": _git,
}


def reads_only(commands: Sequence[list[str] | None], redirects: Sequence[Redirect], findings: int) -> bool:
    """Whether a line only reads: no finding at all, every command ``commands`` (their argv, as the expander
    found them; None for a finding) a reading program used so, and no redirect that writes a file."""
    if findings or not commands:
        return False
    for argv in commands:
        if not argv:
            return False
        program, args = argv[0], argv[1:]
        if not system_program(program):
            return False  # a program of the project's (./configure) or elsewhere: unknown
        check = _PROGRAMS.get(posixpath.basename(program))
        if check is None or (check is not _any_args and RUN_TIME_ARG in args) or not check(args):
            return False  # (an argument only run time knows could be the option that writes)
    return all(_harmless(redirect) for redirect in redirects)


def _harmless(redirect: Redirect) -> bool:
    """A redirect that reads, or writes only to a device that keeps nothing."""
    if redirect.op in _READING_REDIRECTS:
        return True
    return redirect.target.static in _SAFE_TARGETS and redirect.op != "<>"
