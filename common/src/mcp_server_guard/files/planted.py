"""What a tool of ours landed, known to every server of the user: the registry's ``planted/log``.

A cache marker (``out/CACHEDIR.TAG``) makes a directory a cache, whose deletion is not asked — unless a tool planted
it (red team 82 F3). Threat: a judgement that forgets a marker a tool planted, and fails open. Memory alone forgot it
at a restart (red team 85 F3); the history's call records forgot a record rewritten, evicted, or kept by another
server of the user (red team 86); a record names a tree placed whole by its top only, and is written at the apply's
end, after a breath let another server judge (red team 87 F1, F5). So an apply notes, before its first step, every
marker among the paths of its change sets (``changes.plan.note_planted``), and file_write each one it writes, in
one log in the registry every server of the user finds (``registry.directory()``, hidden from every tool as the tree
lock is); an apply whose markers cannot be noted does not run. Each judgement reads what was appended since it last
read (a log compacted since is read again whole: its first line tells one log from another). A path in it only adds
questions.

Bounded, and failing closed: past ``_MAX_BYTES`` an append compacts the log (under its lock) to each marker once —
never dropped by age or by what stands in the tree now (a flood of a command's own never pushes a planted one out:
red team 87 F3; nothing in a tree a command shapes is looked at). Past ``_MAX_KEPT`` of them the log says
``OVERFLOW``, and from then on every marker counts as planted (more is asked).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from mcp_server_guard import registry
from mcp_server_guard.files.treelock import flock_until
from mcp_server_guard.paths import private_dirs, state_dir

__all__ = ["OVERFLOW", "SHOWN_BY", "Planted", "kept", "planted"]

# Names of build or cache directories people give directories of their own too: such a directory is one only where
# it shows it, by a file its tool leaves in it (``changes.effects``). Threat: ``rm -r env`` deleting the user's files
# unasked because of the directory's name alone (red team 5b F8).
SHOWN_BY = {"env": ("pyvenv.cfg", "CACHEDIR.TAG"), "tmp": ("CACHEDIR.TAG",), ".tmp": ("CACHEDIR.TAG",),
            "out": ("CACHEDIR.TAG", "tsconfig.tsbuildinfo", ".tsbuildinfo")}  # fmt: skip
_MAX_BYTES = 16 << 20  # the log's size that makes an append compact it ...
_MAX_KEPT = 100_000  # ... to at most this many markers, each once; past it: OVERFLOW
OVERFLOW = ""  # the key that says the log overflowed: every marker counts as planted
_LOCK_WAIT_S = 5.0
_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def _marker(path: str) -> bool:
    parent, _, name = path.rpartition("/")
    return name in SHOWN_BY.get(parent.rpartition("/")[2], ())


def kept(path: str) -> str | None:
    """What the log keeps of an absolute path a tool landed: a marker's (``SHOWN_BY``) path; else None."""
    return path if _marker(path) else None


class Planted:
    """The log in ``directory`` (made private if missing), read incrementally."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._log, self._lock = directory / "log", directory / "lock"
        self._reading = threading.Lock()
        self._identity: tuple[int, int, bytes] = (-1, -1, b"")  # the log read last: device, inode, first line
        self._offset = 0
        self._paths: dict[str, tuple[int, ...]] = {}

    def add(self, entries: Iterable[str | None]) -> None:
        """Log ``entries`` (``kept`` of absolute paths landed; None and repeats left out), whole or not at all:
        OSError when they could not be (the caller's write must not go on unnoted)."""
        lines = dict.fromkeys(json.dumps(e, ensure_ascii=False) for e in entries if e)
        if not lines:
            return
        data = "".join(f"{line}\n" for line in lines).encode("utf-8", "backslashreplace")
        private_dirs(self.directory)
        with self._locked():
            fd = os.open(self._log, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    data = b"\n" + data  # (a line a failed append left half written ends here, alone)
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view) :]
                except OSError:
                    # Threat (red team 87 F4): half a line left by a full disk, the next path glued onto it and
                    # never read. What was written goes; the caller hears of it.
                    with contextlib.suppress(OSError):
                        os.ftruncate(fd, size)
                    raise
                size += len(data)
            finally:
                os.close(fd)
            if size > _MAX_BYTES:
                self._compact()

    def paths(self) -> dict[str, tuple[int, ...]]:
        """Every path logged (as keys; ``OVERFLOW`` among them once the log overflowed), read again only from where
        the last read ended; never changed once given."""
        with self._reading:
            try:
                fd = os.open(self._log, _OPEN)
            except OSError:
                return self._paths
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    return self._paths
                first = os.pread(fd, 64, 0).partition(b"\n")[0]
                if (st.st_dev, st.st_ino, first) != self._identity or st.st_size < self._offset:
                    self._identity, self._offset, self._paths = (st.st_dev, st.st_ino, first), 0, {}
                data = os.pread(fd, st.st_size - self._offset, self._offset)
            finally:
                os.close(fd)
            whole = data[: data.rfind(b"\n") + 1]  # (a line being appended is read next time)
            self._offset += len(whole)
            new: dict[str, tuple[int, ...]] = {}
            for line in whole.splitlines():
                with contextlib.suppress(ValueError):
                    path = json.loads(line)
                    if isinstance(path, str) and not path.startswith("#") and path not in self._paths:
                        new[path] = ()
            if new:  # (a new dict: another thread may be reading the last one)
                self._paths = {**self._paths, **new}
            return self._paths

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        fd = os.open(self._lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            if not flock_until(fd, time.monotonic() + _LOCK_WAIT_S):
                raise OSError(errno.EAGAIN, "its lock stayed busy")
            yield
        finally:
            os.close(fd)

    def _compact(self) -> None:
        """Rewrite the log (held: ``_locked``) to its markers, each once, at most _MAX_KEPT of them
        (else ``OVERFLOW``), after a first line of its own (a reader tells the new log from the old by it)."""
        with open(self._log, "rb") as file:
            lines = file.read().splitlines()
        markers: dict[str, None] = {}
        overflow = False
        for line in reversed(lines):  # (newest first)
            with contextlib.suppress(ValueError):
                path = json.loads(line)
                if path == OVERFLOW:
                    overflow = True
                elif isinstance(path, str) and path.startswith("/") and _marker(path):
                    markers.setdefault(path, None)
        overflow = overflow or len(markers) > _MAX_KEPT
        kept_paths = [f"#{os.urandom(8).hex()}", *([OVERFLOW] if overflow else []), *list(markers)[:_MAX_KEPT]]
        data = "".join(f"{json.dumps(p, ensure_ascii=False)}\n" for p in kept_paths).encode("utf-8", "backslashreplace")
        temp = self.directory / f"log.{os.getpid()}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, self._log)


_all: dict[Path, Planted] = {}
_made = threading.Lock()


def planted() -> Planted:
    """The log of every server of this user (the registry's; the state directory's where the registry is not this
    user's private directory, as the tree lock's)."""
    where = registry.directory()
    directory = where / "planted" if registry.usable(where) else state_dir() / "planted"
    with _made:
        return _all.setdefault(directory, Planted(directory))
