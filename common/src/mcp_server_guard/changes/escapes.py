"""A project's own overlay attributes, shown to commands as they are: the escape layer.

Overlayfs reads ``user.overlay.*`` attributes in its lower layer as its own: a directory marked
``user.overlay.opaque=x`` hides the entries in it marked ``user.overlay.whiteout``, a file marked
``user.overlay.metacopy`` cannot be opened, and the others are neither shown to the command nor kept when it
changes the file. Any user may set ``user.*`` attributes, so a project can carry them (an archive unpacked with
its attributes, a crafted repository). Where a root has such entries, each call's copy gets one more lower layer
above the root: this server's escape layer, a replica of each such entry (and of the directories above it) whose
``user.overlay.*`` attributes are escaped the way nested overlays escape them (``user.overlay.X`` kept as
``user.overlay.overlay.X``). The command then sees each entry exactly as the host has it, overlayfs reads none of
it as its own, and what the command changes lands under the real names (``changes.xattrs``).

The entries are found by a walk of each root in the background from the server's start (:meth:`Escapes.scan`),
by a look at what every apply lands (:meth:`Escapes.note`), and from the notes every writer of the history store
leaves of what it landed or put back with such attributes (``.marked`` in the store: another server's apply,
``mcp-guard undo``; :func:`note_landed`, read before each call); before each call the replicas are checked
against the real entries (a few ``lstat``s, :meth:`Escapes.refresh`) and made again where one changed. The layer
lives in this server's part of the root's area (``escape-<i>``), which commands never see; the call's init adds it
to the copy's lower layers when it is there (``shell.sandbox.overlays``).

Threat: the real entries are the project's, shaped by anyone. They are read without following a link, beneath
the root (``changes.nofollow``), only directories and regular files are opened (``O_NONBLOCK``), and a replica is
made from what was opened, never by path.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mcp_server_guard import linux
from mcp_server_guard.changes.changeset import TooDeep, walk_real
from mcp_server_guard.changes.nofollow import DIR, Changed, lstat_at, parent
from mcp_server_guard.files.trees import remove_tree
from mcp_server_guard.linux import ACL_NAMES

__all__ = ["ESCAPE_DIR", "MARKS", "Escapes", "marked", "note_landed"]

log = logging.getLogger("mcp_server_guard.changes")

ESCAPE_DIR = "escape-{index}"  # in a server's part of a root's area, beside the copies
_OVERLAY = "user.overlay."
_SCAN_ENTRIES = 500_000  # paths of a root walked at most when the server starts
_WAIT = 2.0  # seconds from the server's start a call waits for that walk at most
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_ESCAPED_PREFIX = _OVERLAY + "overlay."  # how a replica keeps an entry's own user.overlay.* names (_escaped)
MARKS = ".marked"  # in the history store: absolute paths landed carrying overlayfs's attribute names, a line each
_MARKS_MAX = 1 << 20  # past this, the notes start again (whoever read them has; a new server walks the roots)


def note_landed(history_dir: Path, paths: Iterable[str]) -> None:
    """Leave a note of ``paths`` (absolute) that a writer landed or put back carrying overlayfs's attribute names:
    every server of the history store takes it up before its next call (a note names a path to look at, nothing
    more: the real entry decides)."""
    lines = b"".join(json.dumps(p).encode() + b"\n" for p in paths)
    if not lines:
        return
    path = history_dir / MARKS
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            if os.fstat(fd).st_size > _MARKS_MAX:
                os.ftruncate(fd, 0)
            os.write(fd, lines)
        finally:
            os.close(fd)


def marked(path: str) -> bool:
    """Whether an entry (``path``, never followed) carries attributes overlayfs would read as its own, or would
    show under another name (``user.overlay.*``)."""
    try:
        return any(name.startswith(_OVERLAY) for name in os.listxattr(path, follow_symlinks=False))
    except OSError:
        return False


def _escaped(name: str) -> str:
    """The name an attribute is kept under in the escape layer: the command sees it as ``name``."""
    return _OVERLAY + name[len("user.") :] if name.startswith(_OVERLAY) else name


@dataclass
class _Root:
    root: str
    area: str  # this server's part of the root's area
    index: int
    marks: set[str] = field(default_factory=set)  # root-relative paths of the marked entries
    seen: dict[str, tuple[int, ...]] = field(default_factory=dict)  # what each replicated real path was
    scanned: bool = False

    @property
    def layer(self) -> str:
        return os.path.join(self.area, ESCAPE_DIR.format(index=self.index))


class Escapes:
    """The escape layers of one server's writable roots (see the module docstring)."""

    def __init__(self, overlays: Sequence[tuple[str, str]], notes: Path | None = None) -> None:
        # Not where the layer would lie inside its root (copies in the root): overlayfs takes no lower layer inside
        # another (``shell.sandbox.overlays``), so the copy shows such entries raw there.
        self._roots = [
            _Root(root, area, index)
            for index, (root, area) in enumerate(overlays)
            if not os.path.join(area, ESCAPE_DIR.format(index=index)).startswith(root.rstrip("/") + "/")
        ]
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._notes = notes  # the history store's notes of entries landed with attributes (note_landed)
        self._read = 0  # how far they were read
        self._walked = threading.Event()  # the walk from the server's start is over
        self._deadline = 0.0  # until when a call waits for it (monotonic)

    def _learn(self) -> None:
        """Take up the notes other writers left since the last look (one ``stat`` when there are none)."""
        if self._notes is None:
            return
        try:
            fd = os.open(self._notes, _FILE)
        except OSError:
            return
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size == self._read:
                return
            start = self._read if st.st_size > self._read else 0  # started again
            data = os.pread(fd, min(st.st_size - start, _MARKS_MAX), start)
        except OSError:
            return
        finally:
            os.close(fd)
        whole = data.rpartition(b"\n")[0]
        self._read = start + len(whole) + (1 if whole else 0)
        for item in self._roots:
            prefix = item.root.rstrip("/") + "/"
            found: list[str] = []
            for line in whole.splitlines():
                with contextlib.suppress(ValueError):
                    path = json.loads(line)
                    if isinstance(path, str) and path.startswith(prefix):
                        found.append(path[len(prefix) :])
            if found:
                self.note(item.root, found)

    def start(self) -> None:
        """Walk the roots for marked entries in a thread of its own (once)."""
        if self._roots and self._thread is None:
            self._deadline = time.monotonic() + _WAIT
            self._thread = threading.Thread(target=self.scan, name="overlay-marks", daemon=True)
            self._thread.start()

    def scan(self) -> None:
        # At the server's own priority: a first call waits for it (niced, a loaded machine starved it for seconds).
        try:
            for item in self._roots:
                found: set[str] = set()
                try:
                    fd = os.open(item.root, DIR)
                except OSError:
                    continue
                try:
                    budget = [_SCAN_ENTRIES]
                    with contextlib.suppress(OSError, TooDeep):
                        for rel, st in walk_real(fd, "", budget):
                            if stat.S_ISLNK(st.st_mode) or rel.split("/", 1)[0] == ".mcp-guard":
                                continue
                            if marked(f"/proc/self/fd/{fd}/{rel}"):
                                found.add(rel)
                    if budget[0] < 0:
                        log.warning("%s: more than %d paths; overlay attributes of the rest are not escaped",
                                    item.root, _SCAN_ENTRIES)  # fmt: skip
                finally:
                    os.close(fd)
                with self._lock:
                    item.marks |= found
                    item.scanned = True
                if found:
                    log.info("%s: %d entries carry overlayfs's attribute names, escaped on each copy", item.root,
                             len(found))  # fmt: skip
        finally:
            self._walked.set()  # (a call waits no longer, whatever happened)
        self.refresh()

    def escaped(self, root: str) -> frozenset[str]:
        """The root-relative paths a command on the copy sees through the escape layer."""
        with self._lock:
            return frozenset(p for item in self._roots if item.root == root for p in item.marks)

    def data(self, root: str) -> frozenset[tuple[str, bytes]]:
        """The ``user.overlay.*`` attributes (name, value) the root's marked entries carry, read from their replicas
        (our own files): a command's entry holding one of them (renamed, ``cp -a``) lands with it."""
        found: set[tuple[str, bytes]] = set()
        with self._lock:
            item = next((r for r in self._roots if r.root == root), None)
            if item is None:
                return frozenset()
            for rel in item.marks:
                replica = os.path.join(item.layer, rel)
                with contextlib.suppress(OSError):
                    for name in os.listxattr(replica, follow_symlinks=False):
                        if name.startswith(_ESCAPED_PREFIX):
                            value = os.getxattr(replica, name, follow_symlinks=False)
                            found.add((_OVERLAY + name[len(_ESCAPED_PREFIX) :], value))
        return frozenset(found)

    def note(self, root: str, paths: Iterable[str]) -> None:
        """After an apply: the root-relative ``paths`` it landed, looked at again."""
        item = next((r for r in self._roots if r.root == root), None)
        if item is None:
            return
        changed = False
        with contextlib.suppress(OSError):
            fd = os.open(root, DIR)
            try:
                for rel in paths:
                    is_marked = False
                    with contextlib.suppress(Changed, OSError), parent(fd, rel) as (dirfd, name):
                        st = lstat_at(name, dirfd)
                        is_marked = (
                            st is not None and not stat.S_ISLNK(st.st_mode) and marked(f"/proc/self/fd/{dirfd}/{name}")
                        )
                    with self._lock:
                        if is_marked != (rel in item.marks):
                            (item.marks.add if is_marked else item.marks.discard)(rel)
                            changed = True
            finally:
                os.close(fd)
        if changed:
            self.refresh()

    def refresh(self) -> None:
        """Before a call: each root's layer made to match the marked entries (and the directories above them) as they
        are now. In place (a copy mounted already reads its replicas when the command looks, not before: the layer
        is one of its lower layers even while empty). The first one starts the walk for marked entries; a call waits
        for that walk until ``_WAIT`` after it started at most (a larger tree's first calls may not see them)."""
        self.start()
        if threading.current_thread() is not self._thread:
            self._walked.wait(max(0.0, self._deadline - time.monotonic()))
        self._learn()
        with self._lock:
            for item in self._roots:
                marks = sorted(item.marks)
                if not marks:
                    if item.seen or not os.path.isdir(item.layer):
                        _empty(item)  # the directory stays: a copy mounted already has it as a layer
                    continue
                wanted = _with_parents(marks)
                current = _states(item.root, wanted)
                if current != item.seen or not os.path.isdir(item.layer):
                    _sync(item, wanted, current)


def _with_parents(paths: Sequence[str]) -> list[str]:
    """The paths and every directory above them, parents first."""
    found: set[str] = set()
    for path in paths:
        parts = path.split("/")
        found.update("/".join(parts[:depth]) for depth in range(1, len(parts) + 1))
    return sorted(found, key=lambda p: (p.count("/"), p))


def _states(root: str, paths: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """What each real path is now (mode, ino, ctime, mtime, size; empty when gone): a replica is made again when it
    changed."""
    found: dict[str, tuple[int, ...]] = {}
    try:
        fd = os.open(root, DIR)
    except OSError:
        return found
    try:
        for rel in paths:
            st = None
            with contextlib.suppress(Changed, OSError), parent(fd, rel) as (dirfd, name):
                st = lstat_at(name, dirfd)
            found[rel] = (st.st_mode, st.st_ino, st.st_ctime_ns, st.st_mtime_ns, st.st_size) if st is not None else ()
    finally:
        os.close(fd)
    return found


def _sync(item: _Root, paths: Sequence[str], states: dict[str, tuple[int, ...]]) -> None:
    """Make one root's escape layer hold a replica of each of ``paths`` that is there (and nothing else)."""
    try:
        os.makedirs(item.layer, mode=0o700, exist_ok=True)
        root_fd = os.open(item.root, DIR)
        try:
            made: list[tuple[str, os.stat_result]] = []
            first: dict[int, str] = {}  # a real file's inode -> the replica of its first name (names stay one file)
            for rel in paths:
                target = os.path.join(item.layer, rel)
                state = states.get(rel)
                if not state:
                    continue  # gone: neither it nor what is below it is replicated
                linked = first.get(state[1]) if stat.S_ISREG(state[0]) else None
                if stat.S_ISREG(state[0]):
                    first.setdefault(state[1], target)
                if state == item.seen.get(rel) and os.path.lexists(target):
                    continue
                if linked is not None and os.path.lexists(linked):
                    # Another name of a file replicated already: a name of that replica, so that the copy shows one
                    # file with several names (a rewrite through one reaches the others; no origin on copy-up).
                    with contextlib.suppress(OSError):
                        if os.path.isdir(target) and not os.path.islink(target):
                            remove_tree(Path(target))
                        with contextlib.suppress(FileNotFoundError):
                            os.unlink(target)
                        os.link(linked, target)
                    continue
                with contextlib.suppress(Changed, OSError), parent(root_fd, rel) as (dirfd, name):
                    made += _replicate(dirfd, name, target)
            _remove_others(item.layer, {rel for rel in paths if states.get(rel)})
            times = {where: (st.st_atime_ns, st.st_mtime_ns) for where, st in made}
            for rel in reversed(paths):  # deepest first: filling a directory changes its times
                target, state = os.path.join(item.layer, rel), states.get(rel)
                if state and (target in times or stat.S_ISDIR(state[0])):
                    os.utime(target, ns=times.get(target, (state[3], state[3])), follow_symlinks=False)
        finally:
            os.close(root_fd)
        item.seen = states
    except OSError as exc:
        log.warning("%s: the escape layer could not be made (%s)", item.root, exc.strerror or exc)


def _empty(item: _Root) -> None:
    """No marked entries: the layer is an empty directory."""
    try:
        os.makedirs(item.layer, mode=0o700, exist_ok=True)
        _remove_others(item.layer, set())
        item.seen = {}
    except OSError as exc:
        log.warning("%s: the escape layer could not be emptied (%s)", item.root, exc.strerror or exc)


def _remove_others(layer: str, wanted: set[str]) -> None:
    fd = os.open(layer, DIR | os.O_NOFOLLOW)
    try:
        extra = [rel for rel, _st in walk_real(fd, "", [1 << 20], ours=True) if rel not in wanted]
    finally:
        os.close(fd)
    for rel in sorted(extra, key=lambda p: -p.count("/")):
        if any(rel.startswith(other + "/") for other in extra if other != rel):
            continue  # goes with the directory above it
        path = Path(layer) / rel
        if path.is_dir() and not path.is_symlink():
            remove_tree(path)
        else:
            with contextlib.suppress(OSError):
                path.unlink()


def _replicate(dirfd: int, name: str, target: str) -> list[tuple[str, os.stat_result]]:
    """A replica of one real entry (a directory or a regular file, never followed) at ``target``: its mode,
    attributes (escaped) and bytes; its times are set by the caller."""
    st = lstat_at(name, dirfd)
    if st is None:
        return []
    if stat.S_ISDIR(st.st_mode):
        fd = os.open(name, DIR | os.O_NOFOLLOW, dir_fd=dirfd)
        try:
            if not os.path.isdir(target) or os.path.islink(target):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(target)
                os.mkdir(target, 0o700)
            _copy_attributes(fd, target, st)
        finally:
            os.close(fd)
        return [(target, st)]
    if not stat.S_ISREG(st.st_mode):
        return []
    src = os.open(name, _FILE, dir_fd=dirfd)
    try:
        opened = os.fstat(src)
        if not stat.S_ISREG(opened.st_mode):
            return []
        if os.path.isdir(target) and not os.path.islink(target):
            remove_tree(Path(target))
        # In place when it is there: a copy mounted already reads the same inode.
        out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            linux.copy_data(src, out, opened.st_size)  # holes kept: a sparse image costs its data (red team 7 F6)
        finally:
            os.close(out)
        _copy_attributes(src, target, opened)
    finally:
        os.close(src)
    return [(target, opened)]


# A replica shows its real entry's access control lists as they are (red team 5a F3, F4: a directory shown through
# the layer without its default ACL gave the command's new files the umask's mode, readable by others, and a file
# moved lost its ACL).


def _copy_attributes(src: int, target: str, st: os.stat_result) -> None:
    names = os.listxattr(src)
    wanted = {_escaped(name): os.getxattr(src, name) for name in names if name.startswith("user.")}
    wanted |= {name: os.getxattr(src, name) for name in names if name in ACL_NAMES}
    for name in os.listxattr(target, follow_symlinks=False):
        if (name.startswith("user.") or name in ACL_NAMES) and name not in wanted:
            with contextlib.suppress(OSError):
                os.removexattr(target, name, follow_symlinks=False)
    for name, value in wanted.items():
        with contextlib.suppress(OSError):
            os.setxattr(target, name, value, follow_symlinks=False)
    os.chmod(target, stat.S_IMODE(st.st_mode))
