"""The UNIX sockets outside the box: found here, masked in every call's view.

Threat: a command reaching a daemon through its pathname socket, docker's (root on the host), the system or
session bus (power off, start units), journald's ``/dev/log`` (forged log lines), by ``connect`` or by a datagram
``sendto``/``sendmsg`` from any socket it holds (``socketpair`` included). No seccomp filter can read the address
behind the pointer, and Landlock (up to ABI 7) does not restrict pathname sockets; what it can reach is what it
can *name*: a socket's path resolves in the call's own mount namespace. So every pathname socket found outside
the call's writable places is masked there (a read-only ``/dev/null`` mounted over it: connecting to that is
refused). Abstract sockets are another namespace: the box's network namespace (--network deny or policy) or
Landlock's scoping (ABI 6) keeps a command from the host's.

Found where: the sockets the kernel lists as bound in the server's network namespace (``/proc/net/unix``, every
daemon of the host in the usual case), and every socket under ``/run`` (bounded walk: daemons of other network
namespaces keep theirs there). A socket under the call's roots is the project's own and stays usable, as does
anything a command makes in its roots or its own ``/tmp``; a root the client narrowed a call out of is outside
for that call. The box's ``/tmp`` and ``/dev`` are its own: sockets
there are never visible.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Iterable, Sequence

from mcp_server_guard.paths import within_any

WALKED = ("/run",)
NOT_VISIBLE = ("/tmp", "/dev", "/proc")  # noqa: S108 - the box mounts its own over these
_WALK_LIMIT = 20_000  # entries looked at under WALKED, at most
_WALK_DEPTH = 8
_KEEP_S = 2.0  # a scan is reused this long (a call pays for one at most this often)
_MAX_SOCKETS = 4096


def bound_paths(table: str = "/proc/net/unix") -> list[str]:
    """The paths of the pathname sockets bound in this network namespace (abstract and unnamed ones left out)."""
    try:
        with open(table, encoding="utf-8", errors="surrogateescape") as listing:
            lines = listing.read().splitlines()[1:]
    except OSError:
        return []
    paths = []
    for line in lines:
        fields = line.split(None, 7)
        if len(fields) == 8 and fields[7].startswith("/"):
            paths.append(fields[7])
    return paths


def walked_sockets(tops: Iterable[str] = WALKED, limit: int = _WALK_LIMIT) -> list[str]:
    """Every socket below ``tops`` (no link followed), looking at ``limit`` entries at most."""
    found: list[str] = []
    seen = 0
    stack = [(top, 0) for top in tops]
    while stack and seen < limit:
        directory, depth = stack.pop()
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    seen += 1
                    if seen >= limit:
                        break
                    if entry.is_symlink():
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        if depth < _WALK_DEPTH:
                            stack.append((entry.path, depth + 1))
                    elif not entry.is_file(follow_symlinks=False):
                        try:
                            if stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode):
                                found.append(entry.path)
                        except OSError:
                            continue
        except OSError:
            continue
    return found


def found_sockets(
    visible: Sequence[str], bound: Iterable[str] | None = None, walked: Iterable[str] | None = None
) -> tuple[str, ...]:
    """Every socket found that a command could name in the box: not in the box's own /tmp, /dev or /proc, unless
    under ``visible`` (the roots and their copies' places, bound back in). Sorted, bounded."""
    candidates = [*(bound_paths() if bound is None else bound), *(walked_sockets() if walked is None else walked)]
    out: set[str] = set()
    for path in candidates:
        real = os.path.realpath(path)  # a link in the path: the socket is masked where it really is too
        for name in {os.path.normpath(path), real}:
            if within_any(name, NOT_VISIBLE) and not within_any(name, visible):
                continue
            out.add(name)
    return tuple(sorted(out)[:_MAX_SOCKETS])


def outside(found: Iterable[str], allowed: Sequence[str]) -> list[str]:
    """The sockets a call must not reach: those not beneath its ``allowed`` places (its roots, their copies)."""
    return [path for path in found if not within_any(path, allowed)]


class SocketScan:
    """``found_sockets`` for one box, looked for again at most every ``_KEEP_S`` seconds."""

    def __init__(self, visible: Sequence[str]) -> None:
        self.visible = tuple(visible)
        self._lock = threading.Lock()
        self._at = -_KEEP_S
        self._found: tuple[str, ...] = ()

    def fresh(self) -> bool:
        """True while the last scan is reused (``current`` returns at once)."""
        return time.monotonic() - self._at < _KEEP_S

    def current(self) -> tuple[str, ...]:
        with self._lock:
            now = time.monotonic()
            if now - self._at >= _KEEP_S:
                self._found = found_sockets(self.visible)
                self._at = now
            return self._found
