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
from collections.abc import Sequence

from mcp_server_guard.paths import within, within_any

__all__ = ["BOXED_PRIVATE", "HOME_CACHES", "boxed_private", "cache_of_home", "written_outside"]

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
