"""What a tool of ours landed, known to every server of the user: the registry's ``planted/log``.

Two judgements turn on whether a file was landed by a tool rather than by the user's own programs: a cache marker
(``out/CACHEDIR.TAG``) makes a directory a cache, whose deletion is not asked — unless a tool planted it (red team
82 F3); and a ``.pth`` line importing a module is an installer's — unless a tool landed that module (red team 85 F1).
Threat: a judgement that forgets what a tool landed. Memory alone forgot it at a restart (red team 85 F3); the
history's call records forgot a record rewritten for a job's later look, a record the history evicted, and the
records of another server of the user with another state directory (red team 86 F1, F3, F4) — each time the user's
``out/`` went with ``rm -rf out`` unasked. So every call record written (``files.calls.CallRecords.write``: shell_exec
and file_write alike) appends the paths of those kinds it names — a marker's path, a site-packages module's top entry
— to one log in the registry every server of the user finds (``registry.directory()``, hidden from every tool as the
tree lock is), and each judgement reads what was appended since it last read. A path in it only adds questions.

Bounded: past ``_MAX_BYTES`` an append compacts the log (under its lock) to the paths that are still there, each
once, within ``_KEEP_BYTES``: the markers first, then the modules, newest first (a path gone from the tree marks
nothing, and landed again it is logged again; a flood of modules never pushes a marker out — only more than ~40,000
markers planted and still standing would push the oldest out).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from mcp_server_guard import registry
from mcp_server_guard.files.treelock import flock_until
from mcp_server_guard.paths import private_dirs, state_dir

__all__ = ["SHOWN_BY", "Planted", "kept", "planted"]

log = logging.getLogger("mcp_server_guard.files")

# Names of build or cache directories people give directories of their own too: such a directory is one only where
# it shows it, by a file its tool leaves in it (``changes.effects``). Threat: ``rm -r env`` deleting the user's files
# unasked because of the directory's name alone (red team 5b F8).
SHOWN_BY = {"env": ("pyvenv.cfg", "CACHEDIR.TAG"), "tmp": ("CACHEDIR.TAG",), ".tmp": ("CACHEDIR.TAG",),
            "out": ("CACHEDIR.TAG", "tsconfig.tsbuildinfo", ".tsbuildinfo")}  # fmt: skip
_SITE_DIRS = ("site-packages", "dist-packages")
_MAX_BYTES = 8 << 20  # the log's size that makes an append compact it ...
_KEEP_BYTES = 4 << 20  # ... to at most this
_LOCK_WAIT_S = 5.0
_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def _marker(path: str) -> bool:
    parent, _, name = path.rpartition("/")
    return name in SHOWN_BY.get(parent.rpartition("/")[2], ())


def kept(path: str) -> str | None:
    """What the log keeps of an absolute path a tool landed: a marker's path (``SHOWN_BY``); in a site-packages, the
    top entry of the module (``…/site-packages/pkg/`` for a package's file, ``…/site-packages/mod.py``); else None."""
    if _marker(path):
        return path
    parts = path.split("/")
    for at in range(len(parts) - 2, -1, -1):
        if parts[at] in _SITE_DIRS:
            if parts[at + 1] == "__pycache__":
                return None
            top = "/".join(parts[: at + 2])
            return f"{top}/" if len(parts) > at + 2 else top
    return None


class Planted:
    """The log in ``directory`` (made private if missing), read incrementally."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._log, self._lock = directory / "log", directory / "lock"
        self._reading = threading.Lock()
        self._identity: tuple[int, int] = (-1, -1)  # (device, inode) of the log read last
        self._offset = 0
        self._paths: dict[str, tuple[int, ...]] = {}

    def add(self, paths: Iterable[str]) -> None:
        """Log what of ``paths`` (absolute, landed) the log keeps (best effort: said when it cannot)."""
        lines = dict.fromkeys(json.dumps(k, ensure_ascii=False) for p in paths if (k := kept(p)) is not None)
        if not lines:
            return
        data = "".join(f"{line}\n" for line in lines).encode("utf-8", "backslashreplace")
        try:
            private_dirs(self.directory)
            with self._locked():
                fd = os.open(self._log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view) :]
                    size = os.fstat(fd).st_size
                finally:
                    os.close(fd)
                if size > _MAX_BYTES:
                    self._compact()
        except OSError as exc:
            log.warning("what a tool landed could not be noted in %s (%s)", self.directory, exc.strerror or exc)

    def paths(self) -> dict[str, tuple[int, ...]]:
        """Every path logged (as keys), read again only from where the last read ended; never changed once given."""
        with self._reading:
            try:
                fd = os.open(self._log, _OPEN)
            except OSError:
                return self._paths
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    return self._paths
                if (st.st_dev, st.st_ino) != self._identity or st.st_size < self._offset:
                    self._identity, self._offset, self._paths = (st.st_dev, st.st_ino), 0, {}
                data = os.pread(fd, st.st_size - self._offset, self._offset)
            finally:
                os.close(fd)
            whole = data[: data.rfind(b"\n") + 1]  # (a line being appended is read next time)
            self._offset += len(whole)
            new: dict[str, tuple[int, ...]] = {}
            for line in whole.splitlines():
                with contextlib.suppress(ValueError):
                    path = json.loads(line)
                    if isinstance(path, str) and path not in self._paths:
                        new[path] = ()
            if new:  # (a new dict: another thread may be reading the last one)
                self._paths = {**self._paths, **new}
            return self._paths

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        fd = os.open(self._lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            if not flock_until(fd, time.monotonic() + _LOCK_WAIT_S):
                raise OSError(0, "its lock stayed busy")
            yield
        finally:
            os.close(fd)

    def _compact(self) -> None:
        """Rewrite the log (held: ``_locked``) to the paths still there, each once, within _KEEP_BYTES: the markers
        first (a flood of modules landed never pushes a planted marker out), then the modules, newest first."""
        with open(self._log, "rb") as file:
            lines = file.read().splitlines()
        newest: dict[bytes, None] = {}
        for line in reversed(lines):
            newest.setdefault(line, None)
        markers: list[bytes] = []
        modules: list[bytes] = []
        for line in newest:
            with contextlib.suppress(ValueError):
                path = json.loads(line)
                if isinstance(path, str) and os.path.lexists(path.rstrip("/")):
                    (markers if _marker(path) else modules).append(line)
        kept_lines: list[bytes] = []
        size = 0
        for line in (*markers, *modules):
            if size + len(line) + 1 > _KEEP_BYTES:
                break
            kept_lines.append(line)
            size += len(line) + 1
        temp = self.directory / f"log.{os.getpid()}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            view = memoryview(b"".join(line + b"\n" for line in reversed(kept_lines)))
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
