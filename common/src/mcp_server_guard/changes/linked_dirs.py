"""The directories of the roots that hold regular files with several names (hard links): where a call's init
watches for names removed and made again (``shell.sandbox.unlinks``).

Found by ``find`` (``-P``: no link followed, ``-xdev``, names only, no file opened) in a thread of its own, not in
the server's interpreter: a walk of a large tree costs its CPU on the other core. The first call on a copy waits for
the first search a little (``FIRST_WAIT_S``: a project of a few thousand files takes milliseconds); every call then
uses the newest result and starts the next search once it is over, at most every ten times as long as the last
took (and not more often than ``MIN_GAP_S``). So a hard link made outside the server, or by the call just before,
may be seen one call late, and a directory past ``MAX_DIRS`` (or ``MAX_BYTES`` of paths) not at all: those names
are judged by their bytes, as without the watch (docs/shell_exec.md).

Not searched: each root's own area (its ``.mcp-guard``: other servers' copies) and its git object store
(``.git/objects`` at the root: its files are never rewritten in place); directories of those names deeper down are.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import threading
import time
from collections.abc import Sequence

import anyio

from mcp_server_guard.protected import OWN_AREA

__all__ = ["LinkedDirs"]

MAX_DIRS = 4096  # directories said at most (the init watches at most as many)
# Bytes of those paths at most, as the call's request carries them (JSON: a byte that is not UTF-8 takes six): a
# tree of long odd names must not make every request too large for the box (red team 49 F2).
MAX_BYTES = 1 << 20
FIRST_WAIT_S = 0.5  # how long the first call on a copy waits for the first search
MIN_GAP_S = 1.0
SEARCH_S = 30.0  # a search that takes longer is stopped (its result: what it found until then)
_READ_MAX = 64 << 20  # bytes of find's output read at most


class LinkedDirs:
    """The newest search's result for each set of roots; searches run one at a time for each."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._found: dict[tuple[str, ...], tuple[str, ...]] = {}
        self._running: dict[tuple[str, ...], threading.Event] = {}
        self._next: dict[tuple[str, ...], float] = {}  # the earliest the next search may start (monotonic)

    async def dirs(self, roots: Sequence[str]) -> list[str]:
        """The directories found for ``roots`` (absolute); a search started if one is due. The first time, waits for
        that search up to ``FIRST_WAIT_S``."""
        key = tuple(sorted(roots))
        self.refresh(key)
        deadline = time.monotonic() + FIRST_WAIT_S
        while key not in self._found and time.monotonic() < deadline:
            with self._lock:
                running = self._running.get(key)
            if running is None:
                break
            await anyio.sleep(0.005)
        return list(self._found.get(key, ()))

    def refresh(self, roots: Sequence[str]) -> None:
        """Start a search of ``roots`` unless one runs or the last ended too recently."""
        key = tuple(sorted(roots))
        with self._lock:
            if key in self._running or time.monotonic() < self._next.get(key, 0.0):
                return
            self._running[key] = threading.Event()
        threading.Thread(target=self._search, args=(key,), name="mcp-guard-linked-dirs", daemon=True).start()

    def _search(self, key: tuple[str, ...]) -> None:
        started = time.monotonic()
        found: tuple[str, ...] = ()
        try:
            found = tuple(_find(key))
        finally:
            took = time.monotonic() - started
            with self._lock:
                self._found[key] = found
                self._next[key] = time.monotonic() + max(MIN_GAP_S, 10 * took)
                self._running.pop(key).set()


def _pattern(path: str) -> str:
    """``path`` as a pattern of find's ``-path`` that matches it alone (its wildcards escaped)."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in path)


def _find(roots: Sequence[str]) -> list[str]:
    """The directories under ``roots`` holding a regular file with several names, at most ``MAX_DIRS``."""
    # Left out: each root's own area and git store, not every directory of those names below it (red team 55 F2: a
    # vendored tree's ``.mcp-guard`` or a nested clone's ``.git/objects``, hard-linked by ``git clone --local``,
    # went unwatched, and a name there removed and made again landed under the file's untouched names).
    own: list[str] = []
    for root in roots:
        for area in (OWN_AREA, ".git/objects"):
            own += [*(["-o"] if own else []), "-path", _pattern(os.path.join(root, area))]
    argv = ["find", "-P", *roots, "-xdev", "(", *own, ")", "-prune",
            "-o", "-type", "f", "-links", "+1", "-printf", "%h\\0"]  # fmt: skip
    try:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    except OSError:
        return []  # no find here: nothing watched
    assert process.stdout is not None
    found: dict[str, None] = {}
    rest, read, size = b"", 0, 0
    deadline = time.monotonic() + SEARCH_S
    try:
        while len(found) < MAX_DIRS and read < _READ_MAX:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([process.stdout], [], [], left)[0]:
                break
            data = os.read(process.stdout.fileno(), 1 << 16)
            if not data:
                break
            read += len(data)
            *names, rest = (rest + data).split(b"\0")
            for name in names:
                path = os.fsdecode(name) or "/"
                if path not in found:
                    size += len(json.dumps(path)) + 2
                    if size > MAX_BYTES or len(found) >= MAX_DIRS:
                        return list(found)
                    found[path] = None
    finally:
        with contextlib.suppress(OSError):
            process.kill()
        process.stdout.close()
        process.wait()
    return list(found)[:MAX_DIRS]
