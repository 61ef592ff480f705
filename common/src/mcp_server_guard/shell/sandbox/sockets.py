"""The UNIX sockets outside the box: found here, masked in every call's view.

Threat: a command reaching a daemon through its pathname socket, docker's (root on the host), the system or
session bus (power off, start units), journald's ``/dev/log`` (forged log lines), by ``connect`` or by a datagram
``sendto``/``sendmsg`` from any socket it holds (``socketpair`` included). No seccomp filter can read the address
behind the pointer, and Landlock (up to ABI 7) does not restrict pathname sockets; what it can reach is what it
can *name*: a socket's path resolves in the call's own mount namespace. So every pathname socket found outside
the call's writable places is masked there (a read-only ``/dev/null`` mounted over it: connecting to that is
refused). Abstract sockets are another namespace: the box's network namespace (--network deny or policy) or
Landlock's scoping (ABI 6) keeps a command from the host's.

Found where: the box's ``/run`` (and ``/var/run``) is its own and empty, so the daemons' usual place shows no
socket at all, whatever happens there later (a restart, a rename, a new daemon). Elsewhere, the sockets the
kernel lists as bound in the server's network namespace (``/proc/net/unix``), looked for again every few
seconds. A socket under the call's roots is the project's own and stays usable, as does anything a command makes
in its roots or its own ``/tmp``; a root the client narrowed a call out of is outside for that call. The box's
``/tmp`` and ``/dev`` are its own too. Not found: a socket outside ``/run`` bound in another network namespace, or
reached by another name than the one it was bound at (a hard link, a bind mount, a rename, a relative bind);
only an LSM that restricts UNIX connections by inode can close that (Landlock has none up to ABI 7).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable, Sequence

from mcp_server_guard.paths import within_any

RUN_DIRS = ("/run", "/var/run")  # the box's own, empty (box.py): sockets there are never visible
NOT_VISIBLE = ("/tmp", "/dev", "/proc", *RUN_DIRS)  # noqa: S108 - the box mounts its own over these
_KEEP_S = 2.0  # a scan is reused this long (a call pays for one at most this often)
MAX_SOCKETS = 4096


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


def found_sockets(visible: Sequence[str], bound: Iterable[str] | None = None) -> tuple[str, ...]:
    """Every socket found that a command could name in the box: not in the box's own /tmp, /run, /dev or /proc,
    unless under ``visible`` (the roots and their copies' places, bound back in). Sorted."""
    out: set[str] = set()
    for path in bound_paths() if bound is None else bound:
        names = {os.path.normpath(path)}
        if not within_any(path, visible):
            # A link in the path: the socket is masked where it really is too. Never resolved in a root, where a
            # command could point the link at a file of the system's to have it masked in later calls' views.
            names.add(os.path.realpath(path))
        for name in names:
            if within_any(name, NOT_VISIBLE) and not within_any(name, visible):
                continue
            out.add(name)
    return tuple(sorted(out))


class TooManySockets(Exception):
    """More sockets outside a call's roots than can be hidden: the call does not run (fail closed)."""


def outside(found: Iterable[str], allowed: Sequence[str]) -> list[str]:
    """The sockets a call must not reach: those not beneath its ``allowed`` places (its roots, their copies).
    Raises TooManySockets past MAX_SOCKETS: none is ever left out to keep the list short (sockets a command
    binds elsewhere must not push a daemon's off the end)."""
    found_outside = [path for path in found if not within_any(path, allowed)]
    if len(found_outside) > MAX_SOCKETS:
        raise TooManySockets(f"{len(found_outside)} UNIX sockets outside the call's roots (at most {MAX_SOCKETS})")
    return found_outside


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
