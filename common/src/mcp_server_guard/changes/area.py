"""Where the copies live: for each writable root, a directory on the root's own file system, outside the jail.

A command works on an overlay of each writable root (see ``shell.sandbox.overlays``); its writes land in an
upper directory that must be on the root's file system, so that applying a change is a ``rename``. The area of
a root is ``$XDG_STATE_HOME/mcp-guard/copies`` when that lies on the same file system and outside every root
(the usual case), else ``<root>/.mcp-guard/copies`` — hidden from commands, refused by the file tools, and
ignored by git (a ``.gitignore`` of its own).

Each server takes its own part of an area, ``<area>/<pid>-<random>``, and holds an exclusive ``flock`` on its
``lock`` file for as long as it lives; the kernel drops the lock however the server dies, and a pid reused by
another process cannot fool it. At start-up every part whose lock can be taken is a dead server's: what it
left (copies of calls, held change sets) is removed — after its unfinished applies are finished (the apply
journal names the upper files it still needs; see ``changes.apply``). Several servers may share an area.
A copy that changed nothing is removed on a thread of its own (``CopyRemover``).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import queue
import stat
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mcp_server_guard.files.liveness import PART_NAME as _PART
from mcp_server_guard.files.liveness import OwnedDir
from mcp_server_guard.files.trees import remove_dead, remove_tree
from mcp_server_guard.paths import within, within_any
from mcp_server_guard.protected import OWN_AREA

__all__ = ["AREA_IN_ROOT", "CopyArea", "CopyRemover", "Part", "needed_by", "possible_areas", "unneeded"]

log = logging.getLogger("mcp_server_guard.changes")

AREA_IN_ROOT = OWN_AREA  # a root's own area, when the state directory is on another file system
_COPIES = "copies"
_NEEDED = "needed-"  # in a part: ``needed-<journal name>`` holds the path of an apply journal that needs its copies
_NEEDED_MAX = 8192  # bytes of such a note read at most (a path)


@dataclass(frozen=True)
class Part:
    """One server's part of an area, for one or more roots on that file system."""

    directory: Path  # <area>/<pid>-<random>
    roots: tuple[str, ...]
    in_root: str | None  # the root that holds this area (its own .mcp-guard), or None for the state directory


class CopyArea:
    """This server's parts of the areas of its writable roots; ``why`` says what is missing when there are none."""

    def __init__(self, roots: Sequence[str], state_dir: Path) -> None:
        self.parts: list[Part] = []
        self.why = ""
        self._owned: list[OwnedDir] = []
        outer = [r for r in roots if not any(o != r and within(r, o) for o in roots)]
        by_area: dict[Path, tuple[list[str], str | None]] = {}
        try:
            for root in outer:
                area, in_root = _area_for(root, state_dir, roots)
                by_area.setdefault(area, ([], in_root))[0].append(root)
            for area, (covered, in_root) in by_area.items():
                self.parts.append(self._take(area, tuple(covered), in_root))
        except OSError as exc:
            self.close()
            self.parts = []
            self.why = f"no place for the copies ({exc.strerror or exc})"

    def _take(self, area: Path, roots: tuple[str, ...], in_root: str | None) -> Part:
        if in_root is not None:
            _prepare_in_root(Path(in_root) / AREA_IN_ROOT)
        owned = OwnedDir(area)
        self._owned.append(owned)
        return Part(owned.path, roots, in_root)

    def overlays(self) -> list[tuple[str, str]]:
        """(root, part directory) for every writable root that works on a copy."""
        return [(root, str(part.directory)) for part in self.parts for root in part.roots]

    def sweep(self) -> int:
        """Remove what dead servers left in these areas (run their unfinished applies first: ``apply.recover``).
        Returns how many parts went."""
        return sum(remove_dead(area, keep=_needed) for area in {part.directory.parent for part in self.parts})

    def close(self) -> None:
        """At exit: remove this server's parts (every call has ended), then let go of the locks."""
        for part in self.parts:
            with contextlib.suppress(OSError):
                remove_tree(part.directory)
        for owned in self._owned:
            owned.close()
        self._owned = []


def needed_by(uppers: Iterable[str], journal: Path) -> list[Path]:
    """Before an apply's journal exists: each part its ``uppers`` lie in notes that ``journal`` needs it, so that no
    other server's start removes it while the journal is unfinished (red team 69 F1: two servers sharing an area, one
    killed mid-apply; the other's start swept the dead part and the killed one's restart could not finish: the
    command's files were lost). Not fsynced here: the apply syncs the file system of its upper layers before its
    first step. Returns the notes made (``unneeded`` removes them once the journal is gone)."""
    notes: list[Path] = []
    for part in dict.fromkeys(p for upper in uppers if (p := _part_of(upper)) is not None):
        note = part / f"{_NEEDED}{journal.name}"
        fd = os.open(note, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, os.fsencode(journal))
        finally:
            os.close(fd)
        notes.append(note)
    return notes


def unneeded(notes: Iterable[Path]) -> None:
    """The journal the ``notes`` name is gone (finished or gone back): its parts may go with their server."""
    for note in notes:
        with contextlib.suppress(OSError):
            note.unlink()


def _part_of(upper: str) -> Path | None:
    """The part an upper layer lies in: its ancestor directly inside an area (``.../copies/<pid>-<random>``)."""
    path = Path(upper)
    for parent in path.parents:
        if parent.parent.name == _COPIES and _PART.match(parent.name):
            return parent
    return None


def _needed(part: Path) -> bool:
    """Whether a dead server's ``part`` still holds copies an unfinished apply journal needs: one of its
    ``needed-`` notes names a journal that exists (a note of a journal since finished is stale). Read without
    following a link; a note that cannot be read keeps nothing."""
    try:
        names = [name for name in os.listdir(part) if name.startswith(_NEEDED)]
    except OSError:
        return False
    for name in names:
        try:
            fd = os.open(part / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            journal = os.fsdecode(os.read(fd, _NEEDED_MAX))
        except OSError:
            continue
        finally:
            os.close(fd)
        if journal.startswith("/") and os.path.lexists(journal):
            log.warning("left a dead server's copies %s: the unfinished apply %s needs them", part, journal)
            return True
    return False


def possible_areas(roots: Sequence[str], state_dir: Path) -> list[str]:
    """Every place a copy of these roots can be (see ``_area_for``): where a journal may take files from."""
    return [str(state_dir / _COPIES), *(os.path.join(root, AREA_IN_ROOT, _COPIES) for root in roots)]


def _area_for(root: str, state_dir: Path, roots: Sequence[str]) -> tuple[Path, str | None]:
    """The area for ``root``: the state directory's when it is on the root's file system and outside every
    root, else the root's own."""
    device = os.stat(root).st_dev
    probe = state_dir
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    if os.stat(probe).st_dev == device and not within_any(os.path.realpath(state_dir), roots):
        return state_dir / _COPIES, None
    return Path(root) / AREA_IN_ROOT / _COPIES, root


def _prepare_in_root(directory: Path) -> None:
    """A root's own area: a directory of ours (never through a symlink), ignored by git."""
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        st = os.lstat(directory)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            raise OSError(errno.EEXIST, f"{directory} exists and is not a directory of this user") from None
    ignore = directory / ".gitignore"
    if not ignore.exists():
        fd = os.open(ignore, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, b"# mcp-guard keeps the copies commands work on here; never commit them.\n*\n")
        finally:
            os.close(fd)


class CopyRemover:
    """Removes the copies of calls that changed nothing, one after another on a thread of its own, started on
    first use. A copy is a few directories (overlayfs leaves ``work/incompat/volatile`` in a volatile mount's work
    directory), but each rmdir can take a millisecond while other calls' namespaces are being made and torn down:
    a hundred calls ending at once held the event loop for most of a second, and every other call with it."""

    def __init__(self, remove: Callable[[str], None]) -> None:
        self._remove = remove
        self._queue: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._pending = 0  # names put and not removed yet
        self._done = threading.Condition()
        self._thread: threading.Thread | None = None

    def put(self, name: str) -> None:
        with self._done:
            self._pending += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="copy-remover", daemon=True)
                self._thread.start()
        self._queue.put(name)

    def _run(self) -> None:
        while (name := self._queue.get()) is not None:
            try:
                self._remove(name)
            except Exception:  # the thread goes on with the next copy whatever one does
                log.exception("the copy %s could not be removed", name)
            finally:
                with self._done:
                    self._pending -= 1
                    self._done.notify_all()

    def idle(self, timeout: float) -> bool:
        """Wait until every name put so far is removed; False after ``timeout``."""
        with self._done:
            return self._done.wait_for(lambda: self._pending == 0, timeout)

    def stop(self, timeout: float) -> None:
        """Remove what is queued (for at most ``timeout``), then end the thread."""
        with self._done:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join(timeout)
