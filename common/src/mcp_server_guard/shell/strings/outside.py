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
import re
from collections.abc import Callable, Sequence

from mcp_server_guard.paths import within, within_any
from mcp_server_guard.shell.strings.commands import Finding
from mcp_server_guard.shell.strings.matching import RUN_TIME_ARG, parse_args

__all__ = ["BOXED_PRIVATE", "HOME_CACHES", "boxed_private", "cache_of_home", "mode_findings", "written_outside"]

# The box's own places, private to each call.
BOXED_PRIVATE = ("/tmp/", "/var/tmp/", "/dev/shm/", "/dev/null")  # noqa: S108
# Caches in the home directory a cleanup may empty (`rm -rf ~/.cache/pip`): not the user's work.
HOME_CACHES = (".cache", ".npm/_cacache", ".npm/_logs", ".cargo/registry/cache", ".gradle/caches", ".m2/repository",
               ".pnpm-store", ".yarn/cache", ".local/share/virtualenvs")  # fmt: skip
# Writes to a stream or a device: judged as device-write where they reach a disk or the kernel.
_STREAMS = ("/dev", "/proc")


def cache_of_home(path: str, home: str) -> bool:
    """Whether the absolute ``path`` lies in one of the home directory's caches."""
    return bool(home) and any(within(path, posixpath.join(home, cache)) for cache in HOME_CACHES)


def boxed_private(path: str, home: str) -> bool:
    """Whether the absolute ``path`` is one of the box's own places — not where the home directory lies there (a
    HOME under /tmp is still the user's: red team 179 F4's note, ``rm -r ~`` allowed with HOME=/tmp/u)."""
    private = [p.rstrip("/") for p in BOXED_PRIVATE]
    return within_any(path, private) and not (home and within(path, home.rstrip("/") or "/"))


def written_outside(spelled: Sequence[str], home: str) -> str | None:
    """The first place outside the allowed directories a write names, from a target's spellings as
    ``writes.Where.spellings`` gives them (as written, then as a ``~/`` or absolute path for each place it may land
    outside the allowed directories); None where every one is the box's own, a stream or device, or a cache."""
    for one in spelled[1:]:
        path = home.rstrip("/") + one[1:] if home and (one == "~" or one.startswith("~/")) else one
        if not path.startswith("/"):
            continue  # (another user's home, unknown here: judged by name as a start-up file)
        if boxed_private(path, home) or within_any(path, list(_STREAMS)) or cache_of_home(path, home):
            continue
        return one
    return None


# Programs that change a file's mode, owner, ACL or attributes (``chmod -R 000 ~/Documents``, ``chown``, ``setfacl
# -b``, ``chattr +i``: red team 179's leads): the first operand is the mode, owner or attributes unless it is plainly
# a file (``--reference``; setfacl takes its change as an option's value).
_MODE_CHANGERS = frozenset({"chmod", "chown", "chgrp", "setfacl", "chattr"})
_MODE_VALUES = frozenset({"reference", "m", "modify", "x", "remove", "M", "modify-file", "X", "remove-file", "set",
                          "set-file", "v", "p"})  # fmt: skip
_MODE = re.compile(r"[0-7]{1,5}|([ugoa]*[-+=][rwxXstugo]*,?)+|[+=][a-zA-Z]+")


def mode_findings(program: str, argv: Sequence[str], spellings: Callable[[str], list[str]], home: str) -> list[Finding]:
    """``write-outside`` for each file outside the allowed directories whose mode, owner, ACL or attributes
    ``program`` changes (``spellings``: ``writes.Where.spellings``)."""
    if program not in _MODE_CHANGERS:
        return []
    parsed = parse_args(program, argv[1:], _MODE_VALUES)
    files = list(parsed.positionals)
    first = files[0] if files else ""
    if program in ("chown", "chgrp") and not parsed.values_of("reference"):
        files = files[1:]  # (the owner or group)
    elif program in ("chmod", "chattr") and not parsed.values_of("reference") and _MODE.fullmatch(first):
        files = files[1:]
    found: list[Finding] = []
    for name in files:
        if name != RUN_TIME_ARG and (outside := written_outside(spellings(name), home)) is not None:
            found.append(Finding("write-outside", f"{program} changes {outside}, outside the allowed directories"))
            break
    return found
