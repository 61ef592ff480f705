"""What lies outside the allowed directories yet costs the user nothing when a command changes it: the box's own
places (each call's private /tmp), the streams and devices, and the caches in the home directory a cleanup may
empty. The rules marked ``outside`` (``rules.PolicyEngine``) and the judgement of where a program writes
(``writes``) leave these aside; anything else a command writes there is ``write-outside``.

Threat (red team 179 F1): without the box, ``truncate -s 0 ~/Documents/report.txt``, ``cp /dev/null ../other/x``,
``ln -sf /dev/null F``, ``sort -o F``, ``tee F``: a file outside the project emptied or replaced, with no copy and no
undo, while ``rm`` of the same file is refused. Names are compared, never opened.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence

from mcp_server_guard.paths import within, within_any
from mcp_server_guard.patterns import deferred
from mcp_server_guard.shell.strings.commands import Finding
from mcp_server_guard.shell.strings.matching import RUN_TIME_ARG, Args, parse_args

__all__ = [
    "BOXED_PRIVATE",
    "HOME_CACHES",
    "boxed_private",
    "cache_of_home",
    "keeps_content",
    "outside_findings",
    "written_outside",
]

# The box's own places, private to each call.
BOXED_PRIVATE = ("/tmp/", "/var/tmp/", "/dev/shm/", "/dev/null")  # noqa: S108
_PRIVATE = tuple(p.rstrip("/") for p in BOXED_PRIVATE)  # (made once: asked of every operand)
# Caches in the home directory a cleanup may empty (`rm -rf ~/.cache/pip`): not the user's work.
HOME_CACHES = (".cache", ".npm/_cacache", ".npm/_logs", ".cargo/registry/cache", ".gradle/caches", ".m2/repository",
               ".pnpm-store", ".yarn/cache", ".local/share/virtualenvs")  # fmt: skip
# Writes to a stream or a device (judged as device-write where they reach a disk or the kernel), and a process's own
# descriptors — not the rest of /proc: ``/proc/self/root/home/u/x``, ``/proc/self/cwd/../x`` name ordinary files
# (red team 180 F1).
_STREAMS = ("/dev",)
_OWN_DESCRIPTORS = deferred(r"/proc/(?:self|thread-self|[0-9]+)/fd(?:/|$)")


def cache_of_home(path: str, home: str) -> bool:
    """Whether the absolute ``path`` lies in one of the home directory's caches."""
    return bool(home) and any(within(path, posixpath.join(home, cache)) for cache in HOME_CACHES)


def boxed_private(path: str, home: str) -> bool:
    """Whether the absolute ``path`` is one of the box's own places — not where the home directory lies there (a
    HOME under /tmp is still the user's: red team 179 F4's note, ``rm -r ~`` allowed with HOME=/tmp/u)."""
    return within_any(path, _PRIVATE) and not (home and within(path, home.rstrip("/") or "/"))


def written_outside(spelled: Sequence[str], home: str) -> str | None:
    """The first place outside the allowed directories a write names, from a target's spellings as
    ``writes.Where.spellings`` gives them (as written, then as a ``~/`` or absolute path for each place it may land
    outside the allowed directories); None where every one is the box's own, a stream or device, or a cache."""
    for one in spelled[1:]:
        path = home.rstrip("/") + one[1:] if home and (one == "~" or one.startswith("~/")) else one
        if not path.startswith("/"):
            continue  # (another user's home, unknown here: judged by name as a start-up file)
        streams = within_any(path, _STREAMS) or _OWN_DESCRIPTORS.match(path)
        if boxed_private(path, home) or streams or cache_of_home(path, home):
            continue
        return one
    return None


# Programs that change a file's mode, owner, ACL or attributes (``chmod -R 000 ~/Documents``, ``chown``, ``setfacl
# -b``, ``chattr +i``: red team 179's leads), with the options each takes a value for: the first operand is the mode,
# owner or attributes unless it is plainly a file (``--reference``; setfacl takes its change as an option's value).
_MODE_CHANGERS: dict[str, frozenset[str]] = {
    "chmod": frozenset({"reference"}),
    "chown": frozenset({"reference", "from"}),
    "chgrp": frozenset({"reference"}),
    "setfacl": frozenset({"m", "modify", "x", "remove", "M", "modify-file", "X", "remove-file", "set", "set-file"}),
    "chattr": frozenset({"v", "p"}),
}
_MODE = deferred(r"[0-7]{1,5}|([ugoa]*[-+=][rwxXstugo]*,?)+|[+=][a-zA-Z]+")
# Writers ``writes`` does not list (red team 180 F3): the options naming the file each writes over, by program (a
# git subcommand as ``git <name>``); ``fallocate`` punches, zeroes or collapses its operand.
_MORE_WRITERS: dict[str, tuple[str, ...]] = {
    "shuf": ("o", "output"), "uudecode": ("o", "output-file"), "gcc": ("o",), "g++": ("o",), "cc": ("o",),
    "c++": ("o",), "clang": ("o",), "clang++": ("o",), "ld": ("o", "output"),
    "find": ("fprint", "fprint0", "fprintf", "fls"), "git diff": ("output",), "git show": ("output",),
    "git log": ("output",), "git format-patch": ("output", "o", "output-directory"), "git archive": ("o", "output"),
}  # fmt: skip
_MORE_VALUES = frozenset({"o", "output", "output-file", "fprint", "fprint0", "fprintf", "fls", "output-directory",
                          "l", "length", "offset", "x", "I", "L", "D", "U", "format", "prefix"})  # fmt: skip


# Programs that rewrite the files they are given, in place (red team 180's leads: formatters, converters, objcopy,
# strip, rename; ``writes`` lists dos2unix and sponge): by program (a subcommand as ``ruff format``), the options that
# make it write (none: it always does) and those that keep it from writing (a check, a diff, another output file).
_IN_PLACE: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "mac2unix": ((), ("n", "newfile")), "rustfmt": ((), ("check", "emit")), "strip": ((), ("o",)), "objcopy": ((), ()),
    "rename": ((), ("n", "no-act")), "prename": ((), ("n", "no-act")), "perl-rename": ((), ("n", "no-act")),
    "black": ((), ("check", "diff", "code", "c")), "isort": ((), ("check", "check-only", "c", "diff", "stdout")),
    "ruff format": ((), ("check", "diff")), "ruff check": (("fix",), ("diff",)), "stylua": ((), ("check",)),
    "autopep8": (("i", "in-place"), ()), "yapf": (("i", "in-place"), ()), "clang-format": (("i",), ()),
    "prettier": (("write", "w"), ()), "gofmt": (("w",), ()), "goimports": (("w",), ()), "shfmt": (("w", "write"), ()),
    "eslint": (("fix",), ()), "yq": (("i", "inplace"), ()), "terraform fmt": ((), ("check", "diff")),
}  # fmt: skip
_IN_PLACE_VALUES = frozenset({"o", "line-length", "l", "target-version", "t", "config", "c", "config-path", "style",
                              "indent", "ignore-path", "parser", "output-format", "e", "expression"})  # fmt: skip
_IN_PLACE_PROGRAMS = frozenset(name.split()[0] for name in _IN_PLACE)


# git subcommands that change or discard a work tree's files: with ``-C`` or ``--work-tree`` outside the allowed
# directories, another repository's uncommitted work (``git -C ../other checkout -- notes.txt``).
_GIT_WORK_TREE = frozenset(f"git {name}" for name in ("checkout", "restore", "switch", "reset", "clean", "stash",
                                                       "merge", "pull", "rebase", "cherry-pick", "revert", "am",
                                                       "apply", "rm", "mv"))  # fmt: skip
_PROGRAMS = frozenset({*_MODE_CHANGERS, *(name.split()[0] for name in _MORE_WRITERS), *_IN_PLACE_PROGRAMS, "fallocate",
                       "7z", "7za", "7zr"})  # fmt: skip


def overwritten_outside(op: str, target: str | None, spellings: Callable[[str], list[str]], home: str) -> bool:
    """Whether a redirect ``op`` to ``target`` writes over a file outside the allowed directories (``>>`` only adds)."""
    return target is not None and op not in (">>", "&>>") and written_outside(spellings(target), home) is not None


def keeps_content(program: str, parsed: Args) -> bool:
    """Whether ``program`` only adds to what it writes, or touches its times (``touch``, ``tee -a``): no content of a
    file outside is lost, nothing asked (red team 180 F4)."""
    return program == "touch" or (program == "tee" and (parsed.has("a") or parsed.has("append")))


def outside_findings(
    program: str, argv: Sequence[str], spellings: Callable[[str], list[str]], home: str
) -> list[Finding]:
    """``write-outside`` for a file outside the allowed directories whose mode, owner, ACL or attributes ``program``
    changes, or that a writer ``writes`` does not list writes over (``spellings``: ``writes.Where.spellings``)."""
    if program not in _PROGRAMS:
        return []
    changes = program in _MODE_CHANGERS
    values = _MODE_CHANGERS.get(program, _IN_PLACE_VALUES if program in _IN_PLACE_PROGRAMS else _MORE_VALUES)
    parsed = parse_args(program, argv[1:], values)
    sub = program in ("git", "ruff", "terraform") and bool(parsed.positionals)
    named = f"{program} {parsed.positionals[0]}" if sub else program
    files: list[str] = []
    if changes:
        files = list(parsed.positionals)
        plain = not parsed.values_of("reference")
        if plain and (program in ("chown", "chgrp") or (files and _MODE.fullmatch(files[0]))):
            files = files[1:]  # (the owner or group, the mode or attributes)
    elif named in _MORE_WRITERS:
        files = [v for option in _MORE_WRITERS[named] for v in parsed.values_of(option)]
    elif named in _IN_PLACE:
        makes, keeps = _IN_PLACE[named]
        if (not makes or any(parsed.has(f) for f in makes)) and not any(parsed.has(f) for f in keeps):
            files = list(parsed.positionals[1:] if sub else parsed.positionals)
            if program in ("rename", "prename", "perl-rename"):
                files = files[1:]  # (the expression)
    elif program == "fallocate":
        files = parsed.positionals[-1:]
    elif named == "git bundle":
        files = parsed.positionals[2:3]  # (git bundle create FILE …)
    elif named in _GIT_WORK_TREE:
        files = [*parsed.values_of("C"), *parsed.values_of("work-tree")]  # (another repository's files)
    elif program in ("7z", "7za", "7zr"):
        files = [a[2:] for a in argv[1:] if a.startswith("-o") and len(a) > 2]  # (7z's -oDIR, attached)
    for name in files:
        if name != RUN_TIME_ARG and (outside := written_outside(spellings(name), home)) is not None:
            what = "changes" if changes else "writes"
            return [Finding("write-outside", f"{program} {what} {outside}, outside the allowed directories")]
    return []
