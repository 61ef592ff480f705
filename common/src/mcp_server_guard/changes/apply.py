"""Applying a change set to the real tree, and undoing one call: through the one guarded writer.

Every change goes where the command put it, relative to its root's directory fd, resolved by the kernel
beneath the root with no symlink followed (``openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)``): a link planted
since, anywhere on the path, is a conflict, never a way out. Nothing is copied that can be renamed: the upper
layer lies on the root's file system, so a new file, a new directory tree (20,000 files: one rename) or a
replaced file lands in one atomic ``rename``; what it replaces or deletes moves (or is hard-linked) into the
history store under the call's audit id. Directories first, then files, then mode changes; deletions last.

**Conflicts.** The command worked on the tree as it was when the call started (``started_ns``, the kernel's
coarse clock). A path someone else changed since (its ctime is not older; it appeared; it vanished) is never
overwritten or deleted: a file of the command's goes beside it (``<name>.mcp-guard-<auditId>``) and the outcome
says so; a deletion or mode change is skipped and said.

**Crash safety.** Before the first change, the whole plan is written to a journal in the history store
(``.journal/apply-<auditId>.json``, fsynced, locked by this process for as long as it applies); each finished
step appends a line. A server killed mid-apply leaves the journal and the upper layer it still needs: the next
start finishes the plan (:func:`recover`) — every step checks whether it already happened — so a change set
is never half applied and nothing is lost. Then ``calls/<auditId>.json`` records what was done, for undo.

**Undo** (:func:`undo`) plays one call's record backwards through the same steps: what it created is moved
into the history, what it replaced or deleted comes back byte for byte with its mode, a mode change is reverted.
A path changed again after the call is a conflict that stops the whole undo unless forced (and even then, what
is there goes to the history first).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import posixpath
import stat
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_server_guard import linux
from mcp_server_guard.changes.upper import MAX_ENTRIES, Change, ChangeSet, TooDeep, walk_real
from mcp_server_guard.files import openat2 as _openat2
from mcp_server_guard.files.history import HistoryError, HistoryStore, file_kind
from mcp_server_guard.files.reading import sha256_fd
from mcp_server_guard.files.treelock import flock_until, tree_lock
from mcp_server_guard.paths import within_any

__all__ = [
    "JOURNALS",
    "Applied",
    "Applier",
    "Conflict",
    "Outcome",
    "UndoConflict",
    "now_ns",
    "recover",
]

log = logging.getLogger("mcp_server_guard.changes")

_RESOLVE = _openat2.RESOLVE_BENEATH | _openat2.RESOLVE_NO_SYMLINKS | _openat2.RESOLVE_NO_MAGICLINKS
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_RENAME_NOREPLACE = 1
_LOCK_WAIT_S = 10.0
JOURNALS = ".journal"  # the apply journals, in the history store


def now_ns() -> int:
    """Now, to compare with file ctimes: the real-time clock itself (file systems stamp changes with it, coarsely
    or finely: a change made before this moment never looks later; one made in the same clock tick after it may
    look earlier, and is then kept in the history rather than set beside)."""
    return time.time_ns()


@dataclass(frozen=True)
class Conflict:
    """A change not applied as the command made it, because the real tree changed meanwhile."""

    path: str  # absolute
    what: str  # in words: why, and where the command's version went


@dataclass(frozen=True)
class Applied:
    """One path applied (or reverted): what the record of the call keeps for undo."""

    path: str  # absolute
    action: str  # create, modify, delete, meta
    kind: str
    before: str = ""  # the history entry of what was there ("" when nothing was)
    after: tuple[int, ...] = ()  # (dev, ino, ctime_ns, size) of what we put there; empty when nothing
    tree: bool = False
    old_mode: int = -1  # meta: the mode before (and mtime before)
    old_mtime_ns: int = 0
    sha256: str = ""  # what the file held then, where known (file_write): the same bytes count as the same file

    def record(self) -> dict[str, Any]:
        return {
            "path": self.path, "action": self.action, "kind": self.kind, "before": self.before,
            "after": list(self.after), "tree": self.tree, "old_mode": self.old_mode, "old_mtime_ns": self.old_mtime_ns,
            "sha256": self.sha256,
        }  # fmt: skip

    @classmethod
    def of(cls, data: dict[str, Any]) -> Applied:
        after = data.get("after") or []
        return cls(
            path=str(data["path"]), action=str(data["action"]), kind=str(data.get("kind", "file")),
            before=str(data.get("before", "")), after=tuple(int(v) for v in after),
            tree=bool(data.get("tree")), old_mode=int(data.get("old_mode", -1)),
            old_mtime_ns=int(data.get("old_mtime_ns", 0)), sha256=str(data.get("sha256", "")),
        )  # fmt: skip


@dataclass
class Outcome:
    applied: list[Applied] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)


class _Changed(Exception):
    """The real tree is not as the command found it at this path."""


class UndoConflict(Exception):
    """Undo stopped before changing anything: these paths changed after the call."""

    def __init__(self, paths: list[str]) -> None:
        super().__init__(", ".join(paths))
        self.paths = paths


def _identity(st: os.stat_result) -> tuple[int, ...]:
    """What we left at a path: its inode, and its modification time and size then (a rename, ours or an undo's,
    keeps them; a write changes them — one in the same clock tick as ours that keeps the size is the one thing
    this cannot see)."""
    return st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size


def _lstat(name: str, dirfd: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _open_dir(base: int, rel: str) -> int:
    """A directory beneath ``base``, every component checked by the kernel: no symlink, no escape."""
    try:
        if _openat2.available():
            return _openat2.openat2(base, rel or ".", _DIR, _RESOLVE)
    except OSError as exc:
        if exc.errno != errno.ENOSYS:
            raise _Changed(f"its directory changed ({exc.strerror})") from None
    fd = os.dup(base)
    try:
        for part in [p for p in rel.split("/") if p]:
            if part in (".", ".."):
                raise _Changed("an odd path")
            try:
                nxt = os.open(part, _DIR | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                raise _Changed(f"its directory changed ({exc.strerror})") from None
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def _parent(base: int, rel: str) -> Iterator[tuple[int, str]]:
    directory, _, name = rel.rpartition("/")
    fd = _open_dir(base, directory)
    try:
        yield fd, name
    finally:
        os.close(fd)


@contextlib.contextmanager
def _held(dirfd: int, name: str, st: os.stat_result) -> Iterator[None]:
    """For a regular file: hold its flock (file_write's writers take turns on it) while we replace or remove it,
    and make sure the name still is that file. Anything else is never opened."""
    if not stat.S_ISREG(st.st_mode):
        yield
        return
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dirfd)
    except OSError as exc:
        raise _Changed(f"it changed ({exc.strerror})") from None
    try:
        if not flock_until(fd, time.monotonic() + _LOCK_WAIT_S, 0.002):
            raise _Changed("another writer held it")
        now = _lstat(name, dirfd)
        held = os.fstat(fd)
        if now is None or (now.st_dev, now.st_ino) != (held.st_dev, held.st_ino):
            raise _Changed("it was replaced meanwhile")
        yield
    finally:
        os.close(fd)


def _unchanged_tree(dirfd: int, name: str, since_ns: int) -> tuple[int, int]:
    """(paths, bytes) of the real tree ``name``; raises _Changed when anything in it changed at or after
    ``since_ns``."""
    try:
        fd = os.open(name, _DIR | os.O_NOFOLLOW, dir_fd=dirfd)
    except OSError as exc:
        raise _Changed(f"it changed ({exc.strerror})") from None
    try:
        if os.fstat(fd).st_ctime_ns > since_ns:
            raise _Changed("it changed after the command started")
        budget = [MAX_ENTRIES]
        count = size = 0
        try:
            for path, st in walk_real(fd, name, budget):
                if st.st_ctime_ns > since_ns:
                    raise _Changed(f"{path} changed after the command started")
                count += 1
                size += max(st.st_size, st.st_blocks * 512) if stat.S_ISREG(st.st_mode) else 0
        except TooDeep:
            raise _Changed("it is too deep to check") from None
        if budget[0] < 0:
            raise _Changed("it is too large to check")
        return count, size
    finally:
        os.close(fd)


def _unchanged(dirfd: int, name: str, real: os.stat_result, since_ns: int, left: int | None = None) -> tuple[int, int]:
    """Raise _Changed unless what is at ``name`` is as the command found it (or, ``left``, as an earlier apply of
    the same running job left it: its ctime then); returns a tree's (paths, bytes)."""
    if stat.S_ISDIR(real.st_mode):
        return _unchanged_tree(dirfd, name, since_ns)
    if left is not None:
        if real.st_ctime_ns != left:
            raise _Changed("it changed after the job's changes were applied")
    elif real.st_ctime_ns > since_ns:
        raise _Changed("it changed after the command started")
    return (0, 0)


def _copy_beside(src_dir: int, name: str, st: os.stat_result, dst_dir: int) -> str | None:
    """Copy a running job's file, symlink or FIFO (never opened unless a regular file) to a temp name beside its
    target; None when it changed while copied (it is still being written)."""
    temp = f".mcp-guard-{os.urandom(6).hex()}.tmp"
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(name, dir_fd=src_dir)
        except OSError:
            return None  # no longer a symlink: the job changed it; the next look judges it again
        os.symlink(target, temp, dir_fd=dst_dir)
        return temp
    if stat.S_ISFIFO(st.st_mode):
        os.mkfifo(temp, stat.S_IMODE(st.st_mode), dir_fd=dst_dir)
        return temp
    if not stat.S_ISREG(st.st_mode):
        raise _Changed("not a file that can be copied")
    try:
        src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=src_dir)
    except OSError:
        return None
    try:
        opened = os.fstat(src)
        # Threat: the job swapping what it judged (a symlink, a plain file) for another file (an executable)
        # between the judgement and this copy: only the very file judged is copied.
        if (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino) or not stat.S_ISREG(opened.st_mode):
            return None
        out = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dst_dir)
        try:
            offset = 0
            while chunk := os.pread(src, 1 << 20, offset):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(out, view) :]
                offset += len(chunk)
            os.fchmod(out, stat.S_IMODE(st.st_mode))
            os.utime(out, ns=(st.st_atime_ns, st.st_mtime_ns))
        finally:
            os.close(out)
        after = os.fstat(src)
    finally:
        os.close(src)
    if (after.st_size, after.st_mtime_ns, after.st_ctime_ns) != (st.st_size, st.st_mtime_ns, st.st_ctime_ns):
        os.unlink(temp, dir_fd=dst_dir)
        return None
    return temp


def _beside(name: str, audit_id: str, dirfd: int) -> str:
    for n in range(100):
        candidate = f"{name}.mcp-guard-{audit_id}" + (f"-{n}" if n else "")
        if _lstat(candidate, dirfd) is None:
            return candidate
    raise OSError(errno.EEXIST, "no free name beside it")


def _rename(src_dir: int, src: str, dst_dir: int, dst: str, *, noreplace: bool) -> None:
    if not noreplace:
        os.rename(src, dst, src_dir_fd=src_dir, dst_dir_fd=dst_dir)
        return
    linux.renameat2(src_dir, src, dst_dir, dst, _RENAME_NOREPLACE)


def _syncfs(fd: int) -> None:
    with contextlib.suppress(OSError, AttributeError):
        linux.syncfs(fd)


class _Journal:
    """The plan of one apply, and the steps done so far (see the module docstring)."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path, self.fd = path, fd

    @classmethod
    def create(cls, directory: Path, audit_id: str, plan: dict[str, Any]) -> _Journal:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = directory / f"apply-{audit_id}.json"
        # Written whole under a temp name, then renamed: a journal that exists names its whole plan (and is locked).
        temp = directory / f".apply-{audit_id}.{os.getpid()}.tmp"
        fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, json.dumps(plan, ensure_ascii=False).encode("utf-8", "surrogateescape") + b"\n")
            os.fsync(fd)
            os.rename(temp, path)
        except BaseException:
            os.close(fd)
            temp.unlink(missing_ok=True)
            raise
        return cls(path, fd)

    def done(self, index: int, records: list[Applied], conflicts: list[Conflict]) -> None:
        line = {"done": index, "applied": [a.record() for a in records],
                "conflicts": [[c.path, c.what] for c in conflicts]}  # fmt: skip
        with contextlib.suppress(OSError):
            os.write(self.fd, json.dumps(line, ensure_ascii=False).encode("utf-8", "surrogateescape") + b"\n")

    def close(self) -> None:
        self.path.unlink(missing_ok=True)
        os.close(self.fd)


@dataclass(frozen=True)
class _Op:
    """One step of a plan: ``kind`` is tree, place, meta or delete (apply); remove, restore, unmeta (undo)."""

    kind: str
    root: str  # the real root
    path: str  # relative to it
    upper: str = ""  # apply: the upper root the command's version lies in
    entry: str = ""  # the history id this step keeps a pre-image under (or restores from)
    change: dict[str, Any] = field(default_factory=dict)  # apply: the Change; undo: the Applied record

    def plan(self) -> dict[str, Any]:
        return {"kind": self.kind, "root": self.root, "path": self.path, "upper": self.upper, "entry": self.entry,
                "change": self.change}  # fmt: skip


class Applier:
    """Applies change sets and undoes calls, through the history store and the journal. One apply at a time per
    process (they are short; the commands are what run concurrently)."""

    def __init__(self, history: HistoryStore) -> None:
        self.history = history
        # Held across a judgement and the apply it decides (Transactions): no other apply of this server comes
        # between them.
        self.lock = threading.RLock()

    @property
    def journals(self) -> Path:
        return self.history.directory / JOURNALS

    # -- apply ---------------------------------------------------------------------------------------

    def apply(
        self,
        sets: Sequence[ChangeSet],
        audit_id: str,
        started_ns: int,
        *,
        skip: frozenset[tuple[str, str]] = frozenset(),
        what: dict[str, Any] | None = None,
        live: bool = False,
        baseline: dict[str, int] | None = None,
    ) -> Outcome:
        """Apply ``sets`` (each read from its upper layer after the call ended), leaving out ``skip`` ((root, path)
        pairs refused by the judgement: left in no tree that moves whole). ``what``: the call, for its record.

        ``live``: the command still runs (a background job's look): its files are copied, not moved, and one still
        being written waits for the next look. ``baseline`` (updated): for a job, the ctime each path had when an
        earlier apply of the same job left it; such a path is the job's own, not a conflict."""
        ops: list[_Op] = []
        for changes in sets:
            ops += _plan(changes, skip, self.history, live=live)
        if not ops:
            return Outcome()
        left: dict[str, int] = dict(baseline or {})
        plan = {"audit_id": audit_id, "started_ns": started_ns, "ops": [op.plan() for op in ops], "what": what or {},
                "baseline": left}  # fmt: skip
        with self.lock:
            outcome = self._run(plan, done={})
        if baseline is not None:
            baseline.clear()
            baseline.update(left)
        return outcome

    def _run(
        self,
        plan: dict[str, Any],
        done: dict[int, tuple[list[Applied], list[Conflict]]],
        journal: _Journal | None = None,
    ) -> Outcome:
        audit_id = str(plan["audit_id"])
        ops = [_Op(**op) for op in plan["ops"]]
        roots: dict[str, int] = {}
        uppers: dict[str, int] = {}
        outcome = Outcome()
        try:
            # Each root and upper directory opened once (not once per step: a call that made 600 files must not
            # hold 1,200 descriptors, nor leak them).
            for root in dict.fromkeys(op.root for op in ops):
                roots[root] = os.open(root, _DIR)
            for upper in dict.fromkeys(op.upper for op in ops if op.upper):
                uppers[upper] = os.open(upper, _DIR)
            for fd in uppers.values():
                _syncfs(fd)  # the command's bytes are on disk before any name points at them
            if journal is None:
                journal = _Journal.create(self.journals, audit_id, plan)
            for index, op in enumerate(ops):
                if index in done:
                    records, conflicts = done[index]
                    journal.done(index, records, conflicts)
                else:
                    records, conflicts = self._step(op, roots[op.root], uppers.get(op.upper, -1), plan)
                    journal.done(index, records, conflicts)
                outcome.applied += records
                outcome.conflicts += conflicts
            for fd in roots.values():
                _syncfs(fd)
            self._record(plan, outcome)
            journal.close()
            journal = None
        finally:
            for fd in [*roots.values(), *uppers.values()]:
                os.close(fd)
            if journal is not None:
                os.close(journal.fd)  # left for recover(): the next start finishes it
        return outcome

    def _record(self, plan: dict[str, Any], outcome: Outcome) -> None:
        if not outcome.applied and not outcome.conflicts:
            return
        self.history.record_call(
            str(plan["audit_id"]),
            sorted({str(op["root"]) for op in plan["ops"]}),
            [a.record() for a in outcome.applied],
            conflicts=[[c.path, c.what] for c in outcome.conflicts],
            **plan.get("what", {}),
        )

    def _step(self, op: _Op, root: int, upper: int, plan: dict[str, Any]) -> tuple[list[Applied], list[Conflict]]:
        audit_id, started = str(plan["audit_id"]), int(plan["started_ns"])
        baseline: dict[str, int] = plan.setdefault("baseline", {})
        absolute = posixpath.join(op.root, op.path)
        try:
            if op.kind in ("tree", "place"):
                return self._place(op, root, upper, audit_id, started, baseline.get(absolute))
            if op.kind == "copy":
                return self._copy(op, root, upper, audit_id, started, baseline)
            if op.kind == "meta":
                return self._meta(op, root, started, baseline)
            if op.kind == "delete":
                return self._delete(op, root, audit_id, started, baseline), []
            if op.kind == "remove":
                return self._remove(op, root, audit_id), []
            if op.kind == "restore":
                return self._restore(op, root), []
            if op.kind == "unmeta":
                return self._unmeta(op, root), []
            raise ValueError(op.kind)
        except _Changed as exc:
            return [], [Conflict(absolute, f"not {_verb(op.kind)}: {exc}")]
        except OSError as exc:
            log.warning("could not apply %s %s: %s", op.kind, absolute, exc)
            return [], [Conflict(absolute, f"not {_verb(op.kind)}: {exc.strerror or exc}")]

    def _place(
        self, op: _Op, root: int, upper: int, audit_id: str, started: int, left: int | None = None
    ) -> tuple[list[Applied], list[Conflict]]:
        """A file, symlink, FIFO or whole directory tree of the command's, into the real tree."""
        change = Change(**op.change)
        absolute = posixpath.join(op.root, op.path)
        with contextlib.ExitStack() as stack:
            src_dir, name = stack.enter_context(_parent(upper, op.path))
            ours = _lstat(name, src_dir)
            if ours is None:
                return [], []  # placed before a crash (recover): nothing left to place
            dst_dir, _ = stack.enter_context(_parent(root, op.path))
            real = _lstat(name, dst_dir)
            tree = stat.S_ISDIR(ours.st_mode)
            replacing = real is not None and (change.opaque or stat.S_ISDIR(real.st_mode) != tree)

            def aside(why: str) -> tuple[list[Applied], list[Conflict]]:
                return self._aside(src_dir, name, dst_dir, absolute, audit_id, why, tree)

            if real is None:
                if change.origin or left is not None:
                    return aside("it was deleted meanwhile")
                try:
                    _rename(src_dir, name, dst_dir, name, noreplace=True)
                except FileExistsError:
                    return aside("it was created meanwhile")
                return [self._placed(absolute, change, dst_dir, name, "", tree)], []
            if tree and not replacing:
                return self._merge(src_dir, name, dst_dir, absolute, audit_id, started)
            if change.action == "create" and not replacing and left is None:
                return aside("it was created meanwhile")
            try:
                if not self._kept_already(op.entry, real):
                    counted = _unchanged(dst_dir, name, real, started, left)
                else:
                    counted = (0, 0)  # linked into the history before a crash (which changed its ctime): ours
                with _held(dst_dir, name, real):
                    entry = self.history.keep(
                        dst_dir, name, absolute, audit_id, move=replacing, entry_id=op.entry, durable=False,
                        tree=counted,
                    )  # fmt: skip
                    _rename(src_dir, name, dst_dir, name, noreplace=replacing)
            except _Changed as exc:
                return aside(str(exc))
            return [self._placed(absolute, change, dst_dir, name, entry.id, tree)], []

    def _kept_already(self, entry_id: str, real: os.stat_result) -> bool:
        """Whether ``real`` is the very inode this step linked into the history (a step replayed after a crash)."""
        try:
            kept = os.lstat(self.history.directory / f"{entry_id}.data")
        except OSError:
            return False
        return (kept.st_dev, kept.st_ino) == (real.st_dev, real.st_ino)

    @staticmethod
    def _placed(absolute: str, change: Change, dirfd: int, name: str, before: str, tree: bool) -> Applied:
        placed = _lstat(name, dirfd)
        after = _identity(placed) if placed is not None else ()
        return Applied(absolute, "modify" if before else "create", change.kind, before=before, after=after, tree=tree)

    def _merge(
        self, src_dir: int, name: str, dst_dir: int, absolute: str, audit_id: str, started: int
    ) -> tuple[list[Applied], list[Conflict]]:
        """A directory of the command's where the real tree has one now (made meanwhile): entry by entry."""
        records: list[Applied] = []
        conflicts: list[Conflict] = []
        src = os.open(name, _DIR | os.O_NOFOLLOW, dir_fd=src_dir)
        dst = os.open(name, _DIR | os.O_NOFOLLOW, dir_fd=dst_dir)
        try:
            with os.scandir(src) as entries:
                names = sorted(e.name for e in entries)
            for child in names:
                ours = _lstat(child, src)
                if ours is None:
                    continue
                path = posixpath.join(absolute, child)
                real = _lstat(child, dst)
                if real is None:
                    _rename(src, child, dst, child, noreplace=True)
                    placed = _lstat(child, dst)
                    records.append(Applied(path, "create", "dir" if stat.S_ISDIR(ours.st_mode) else "file",
                                           after=_identity(placed) if placed else (),
                                           tree=stat.S_ISDIR(ours.st_mode)))  # fmt: skip
                elif stat.S_ISDIR(ours.st_mode) and stat.S_ISDIR(real.st_mode):
                    more, clashes = self._merge(src, child, dst, path, audit_id, started)
                    records += more
                    conflicts += clashes
                else:
                    _, clash = self._aside(src, child, dst, path, audit_id, "it was created meanwhile",
                                           stat.S_ISDIR(ours.st_mode))  # fmt: skip
                    conflicts += clash
        finally:
            os.close(src)
            os.close(dst)
        return records, conflicts

    @staticmethod
    def _aside(
        src_dir: int, name: str, dst_dir: int, absolute: str, audit_id: str, why: str, tree: bool
    ) -> tuple[list[Applied], list[Conflict]]:
        """The command's version goes beside what is there now; nothing of the real tree is touched."""
        beside = _beside(name, audit_id, dst_dir)
        _rename(src_dir, name, dst_dir, beside, noreplace=True)
        placed = _lstat(beside, dst_dir)
        where = posixpath.join(posixpath.dirname(absolute), beside)
        record = Applied(where, "create", "dir" if tree else "file", after=_identity(placed) if placed else (),
                         tree=tree)  # fmt: skip
        return [record], [Conflict(absolute, f"{why}: the command's version is beside it, as {beside}")]

    def _meta(self, op: _Op, root: int, started: int, baseline: dict[str, int]) -> tuple[list[Applied], list[Conflict]]:
        change = Change(**op.change)
        absolute = posixpath.join(op.root, op.path)
        with _parent(root, op.path) as (dirfd, name):
            real = _lstat(name, dirfd)
            if real is None or stat.S_ISLNK(real.st_mode):
                raise _Changed("it is gone")
            if not stat.S_ISDIR(real.st_mode):
                _unchanged(dirfd, name, real, started, baseline.get(absolute))
            elif real.st_ctime_ns > started:
                raise _Changed("it changed after the command started")
            with _held(dirfd, name, real):
                os.chmod(name, change.mode, dir_fd=dirfd)
                if change.kind != "dir" and change.mtime_ns:
                    os.utime(name, ns=(real.st_atime_ns, change.mtime_ns), dir_fd=dirfd)
            now = _lstat(name, dirfd)
            after = _identity(now) if now is not None else ()
            if now is not None:
                baseline[absolute] = now.st_ctime_ns
        return [Applied(absolute, "meta", change.kind, after=after, old_mode=stat.S_IMODE(real.st_mode),
                        old_mtime_ns=real.st_mtime_ns)], []  # fmt: skip

    def _delete(self, op: _Op, root: int, audit_id: str, started: int, baseline: dict[str, int]) -> list[Applied]:
        absolute = posixpath.join(op.root, op.path)
        with _parent(root, op.path) as (dirfd, name):
            kept = self.history.directory / f"{op.entry}.json"
            real = _lstat(name, dirfd)
            if real is None:
                if kept.exists():  # deleted before a crash (recover)
                    return [Applied(absolute, "delete", "file", before=op.entry)]
                return []  # gone already: nothing to delete
            counted = _unchanged(dirfd, name, real, started, baseline.get(absolute))
            with _held(dirfd, name, real):
                entry = self.history.keep(dirfd, name, absolute, audit_id, move=True, entry_id=op.entry, durable=False,
                                          tree=counted)  # fmt: skip
            baseline.pop(absolute, None)
        kind = "dir" if stat.S_ISDIR(real.st_mode) else Change(**op.change).kind
        return [Applied(absolute, "delete", kind, before=entry.id, tree=stat.S_ISDIR(real.st_mode))]

    def _copy(
        self, op: _Op, root: int, upper: int, audit_id: str, started: int, baseline: dict[str, int]
    ) -> tuple[list[Applied], list[Conflict]]:
        """A running job's file, directory, symlink or FIFO, copied into the real tree (the job still owns its
        upper layer: nothing is moved out of it). A file still being written is left for the next look."""
        change = Change(**op.change)
        absolute = posixpath.join(op.root, op.path)
        left = baseline.get(absolute)
        with contextlib.ExitStack() as stack:
            src_dir, name = stack.enter_context(_parent(upper, op.path))
            ours = _lstat(name, src_dir)
            if ours is None:
                return [], []
            dst_dir, _ = stack.enter_context(_parent(root, op.path))
            real = _lstat(name, dst_dir)
            if stat.S_ISDIR(ours.st_mode):
                if real is None:
                    os.mkdir(name, stat.S_IMODE(ours.st_mode), dir_fd=dst_dir)
                    placed = _lstat(name, dst_dir)
                    return [Applied(absolute, "create", "dir", after=_identity(placed) if placed else ())], []
                if not stat.S_ISDIR(real.st_mode):
                    raise _Changed("a file is there, where the job made a directory")
                return [], []
            if (
                file_kind(ours.st_mode) != change.kind
                or stat.S_IMODE(ours.st_mode) != change.mode
                or (change.kind == "file" and ours.st_size != change.size)
            ):
                return [], []  # not what was judged (the job changed it since): the next look judges it again
            if real is None and (change.origin or left is not None):
                raise _Changed("it was deleted meanwhile")
            if real is not None:
                if stat.S_ISDIR(real.st_mode):
                    raise _Changed("a directory is there")
                if change.action == "create" and left is None:
                    raise _Changed("it was created meanwhile")
                if not self._kept_already(op.entry, real):
                    _unchanged(dst_dir, name, real, started, left)
            temp = _copy_beside(src_dir, name, ours, dst_dir)
            if temp is None:
                return [], []  # still being written: the next look takes it
            try:
                before = ""
                if real is not None:
                    with _held(dst_dir, name, real):
                        before = self.history.keep(dst_dir, name, absolute, audit_id, move=False, entry_id=op.entry,
                                                   durable=False).id  # fmt: skip
                        os.rename(temp, name, src_dir_fd=dst_dir, dst_dir_fd=dst_dir)
                else:
                    _rename(dst_dir, temp, dst_dir, name, noreplace=True)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=dst_dir)
                raise
            placed = _lstat(name, dst_dir)
            if placed is not None:
                baseline[absolute] = placed.st_ctime_ns
            after = _identity(placed) if placed is not None else ()
        return [Applied(absolute, "modify" if before else "create", change.kind, before=before, after=after)], []

    # -- undo steps ----------------------------------------------------------------------------------

    def _remove(self, op: _Op, root: int, audit_id: str) -> list[Applied]:
        """Undo a creation (or the current version of a modification): what is there goes to the history."""
        absolute = posixpath.join(op.root, op.path)
        with _parent(root, op.path) as (dirfd, name):
            real = _lstat(name, dirfd)
            if real is None:
                return []
            counted = _unchanged(dirfd, name, real, now_ns() + 1) if stat.S_ISDIR(real.st_mode) else (0, 0)
            with _held(dirfd, name, real):
                entry = self.history.keep(dirfd, name, absolute, audit_id, move=True, entry_id=op.entry, durable=False,
                                          tree=counted)  # fmt: skip
        kind = "dir" if stat.S_ISDIR(real.st_mode) else "file"
        return [Applied(absolute, "delete", kind, before=entry.id, tree=stat.S_ISDIR(real.st_mode))]

    def _restore(self, op: _Op, root: int) -> list[Applied]:
        """Undo a deletion or modification: the kept pre-image comes back (its inode, or a copy)."""
        absolute = posixpath.join(op.root, op.path)
        with _parent(root, op.path) as (dirfd, name):
            if _lstat(name, dirfd) is not None:
                raise _Changed("something is there again")
            try:
                entry = self.history.take(op.entry, dirfd, name)
            except HistoryError as exc:
                raise _Changed(exc.message) from None
            placed = _lstat(name, dirfd)
        after = _identity(placed) if placed is not None else ()
        return [Applied(absolute, "create", "dir" if entry.kind == "tree" else entry.kind, after=after,
                        tree=entry.kind == "tree")]  # fmt: skip

    def _unmeta(self, op: _Op, root: int) -> list[Applied]:
        record = Applied.of(op.change)
        absolute = posixpath.join(op.root, op.path)
        with _parent(root, op.path) as (dirfd, name):
            real = _lstat(name, dirfd)
            if real is None or stat.S_ISLNK(real.st_mode):
                raise _Changed("it is gone")
            os.chmod(name, record.old_mode, dir_fd=dirfd)
            if record.old_mtime_ns and not stat.S_ISDIR(real.st_mode):
                os.utime(name, ns=(real.st_atime_ns, record.old_mtime_ns), dir_fd=dirfd)
        return [Applied(absolute, "meta", record.kind, old_mode=stat.S_IMODE(real.st_mode),
                        old_mtime_ns=real.st_mtime_ns)]  # fmt: skip

    # -- undo ----------------------------------------------------------------------------------------

    def undo(self, audit_id: str, undo_id: str, roots: Sequence[str], *, force: bool = False) -> Outcome:
        """Put back what call ``audit_id`` changed (recorded as call ``undo_id``). Raises UndoConflict (nothing
        done) when a path changed after the call, unless ``force``; HistoryError when there is no such call."""
        manifest = self.history.manifest(audit_id)
        if manifest.get("undone_by"):
            raise HistoryError("HISTORY_NOT_FOUND", f"call {audit_id} was undone already (by {manifest['undone_by']})")
        applied_ns = int(manifest.get("applied_ns", 0))
        records = [Applied.of(r) for r in manifest.get("changes", [])]
        ops: list[_Op] = []
        changed: list[str] = []
        for record in reversed(records):
            root = _root_of(record.path, roots)
            if root is None:
                changed.append(f"{record.path} (outside the allowed directories now)")
                continue
            rel = posixpath.relpath(record.path, root)
            if not force and not _as_left(root, rel, record, applied_ns):
                changed.append(record.path)
            if record.action in ("create", "modify"):
                ops.append(_Op("remove", root, rel, entry=self.history.new_id()))
            if record.action in ("modify", "delete") and record.before:
                ops.append(_Op("restore", root, rel, entry=record.before))
            if record.action == "meta":
                ops.append(_Op("unmeta", root, rel, change=record.record()))
        if changed:
            raise UndoConflict(changed)
        plan = {"audit_id": undo_id, "started_ns": now_ns(), "ops": [op.plan() for op in ops],
                "what": {"tool": "undo", "undoes": audit_id}}  # fmt: skip
        with self.lock, tree_lock(os.stat(root).st_dev for root in {op.root for op in ops}):
            outcome = self._run(plan, done={})
        manifest["undone_by"] = undo_id
        self.history.write_manifest(audit_id, manifest)
        return outcome


def _verb(kind: str) -> str:
    return {"delete": "deleted", "meta": "changed", "remove": "removed", "restore": "restored"}.get(kind, "applied")


def _root_of(path: str, roots: Sequence[str]) -> str | None:
    best = None
    for root in roots:
        if (path == root or path.startswith(root.rstrip("/") + "/")) and (best is None or len(root) > len(best)):
            best = root
    return best


def _as_left(root: str, rel: str, record: Applied, applied_ns: int) -> bool:
    """Whether the path still is as the call left it."""
    try:
        root_fd = os.open(root, _DIR)
    except OSError:
        return False
    try:
        with _parent(root_fd, rel) as (dirfd, name):
            real = _lstat(name, dirfd)
            if record.action == "delete":
                return real is None
            if real is None:
                return False
            if record.tree:
                try:
                    _unchanged_tree(dirfd, name, applied_ns)
                except _Changed:
                    return False
                return (real.st_dev, real.st_ino) == record.after[:2]
            if _identity(real) == record.after:
                return True
            return bool(record.sha256) and stat.S_ISREG(real.st_mode) and _sha256(dirfd, name) == record.sha256
    except _Changed:
        return False
    finally:
        os.close(root_fd)


def _sha256(dirfd: int, name: str) -> str:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dirfd)
    except OSError:
        return ""
    try:
        return sha256_fd(fd)
    finally:
        os.close(fd)


def _plan(
    changes: ChangeSet, skip: frozenset[tuple[str, str]], history: HistoryStore, *, live: bool = False
) -> list[_Op]:
    """The steps for one change set: trees and files first (in the order the reader found them: parents before
    children), then mode changes, then deletions. Entries inside a tree that moves whole are not steps of their
    own; a refused one is taken out of the tree first (removed from the upper layer). ``live``: every path is a
    step of its own, copied (the upper layer still belongs to a running command)."""
    if live:
        return _live_plan(changes, skip, history)
    root, upper = changes.root, changes.upper
    skipped = {path for r, path in skip if r == root}
    firsts: list[_Op] = []
    metas: list[_Op] = []
    deletes: list[_Op] = []
    for change in changes.changes:
        if change.path in skipped:
            if change.top and change.action == "create":
                _drop(upper, change.path)
            continue
        if change.top:
            continue  # moves (or goes) with its top
        data = _change_data(change)
        if change.action in ("create", "modify"):
            kind = "tree" if change.kind == "dir" else "place"
            firsts.append(_Op(kind, root, change.path, upper=upper, entry=history.new_id(), change=data))
        elif change.action == "meta":
            metas.append(_Op("meta", root, change.path, upper=upper, change=data))
        elif change.action == "delete":
            deletes.append(_Op("delete", root, change.path, entry=history.new_id(), change=data))
    return [*firsts, *metas, *deletes]


def _live_plan(changes: ChangeSet, skip: frozenset[tuple[str, str]], history: HistoryStore) -> list[_Op]:
    root, upper = changes.root, changes.upper
    skipped = {path for r, path in skip if r == root}
    firsts: list[_Op] = []
    metas: list[_Op] = []
    deletes: list[_Op] = []
    for change in changes.changes:
        if change.path in skipped or (change.top and change.top in skipped and change.action == "delete"):
            continue
        data = _change_data(change)
        if change.action == "delete":
            if change.top:
                continue  # goes with its top
            deletes.append(_Op("delete", root, change.path, entry=history.new_id(), change=data))
        elif change.opaque:
            continue  # a tree replaced while the job runs: applied when it ends
        elif change.action in ("create", "modify"):
            firsts.append(_Op("copy", root, change.path, upper=upper, entry=history.new_id(), change=data))
        elif change.action == "meta":
            metas.append(_Op("meta", root, change.path, upper=upper, change=data))
    return [*firsts, *metas, *deletes]


def _change_data(change: Change) -> dict[str, Any]:
    return {name: getattr(change, name) for name in change.__dataclass_fields__}


def _drop(upper: str, rel: str) -> None:
    """Take a refused entry out of the command's tree before the tree moves (the upper layer is ours now)."""
    from mcp_server_guard.files.trees import remove_tree  # noqa: PLC0415 - rare

    with contextlib.suppress(OSError, _Changed):
        fd = os.open(upper, _DIR)
        try:
            with _parent(fd, rel) as (dirfd, name):
                st = _lstat(name, dirfd)
                if st is None:
                    return
                if stat.S_ISDIR(st.st_mode):
                    remove_tree(Path(f"/proc/self/fd/{dirfd}") / name)
                else:
                    os.unlink(name, dir_fd=dirfd)
        finally:
            os.close(fd)


def recover(history: HistoryStore, roots: Sequence[str], areas: Sequence[str]) -> int:
    """At start-up: finish every apply a dead server left half done (its journal is not locked) whose every step
    lies inside ``roots`` and takes its files from inside ``areas`` (the places this server's copies can be);
    another's is left for a server of those directories. Returns how many were finished.

    Threat: a journal someone forged (the history store is hidden from every tool; this is the second wall)
    naming a root, a path or an upper directory elsewhere, to have the server place or remove files there."""
    directory = history.directory / JOURNALS
    finished = 0
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return 0
    applier = Applier(history)
    for name in names:
        if not (name.startswith("apply-") and name.endswith(".json")):
            continue
        path = directory / name
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        journal: _Journal | None = _Journal(path, fd)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # its server is alive and applying
            with os.fdopen(os.dup(fd), "rb") as fh:
                lines = fh.read().decode("utf-8", "surrogateescape").splitlines()
            plan, done = _read_journal(lines)
            if plan is None:
                path.unlink(missing_ok=True)
                continue
            outside = _outside(plan, roots, areas)
            if outside:
                log.warning("left the apply journal %s for another server: %s", path, outside)
                continue
            missing = [op["upper"] for op in plan["ops"] if op.get("upper") and not os.path.isdir(op["upper"])]
            if missing:
                log.error("cannot finish apply %s: its upper layer %s is gone", plan.get("audit_id"), missing[0])
                path.unlink(missing_ok=True)
                continue
            journal = None  # _run closes (and removes) it once the plan is finished
            applier._run(plan, done, _Journal(path, fd))
            finished += 1
            log.warning("finished the apply of call %s that a dead server left half done", plan.get("audit_id"))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.error("cannot finish the apply journal %s: %s", path, exc)
        finally:
            if journal is not None:
                os.close(fd)
    return finished


def _outside(plan: dict[str, Any], roots: Sequence[str], areas: Sequence[str]) -> str:
    """Why a journal's plan is not this server's to finish ("" when every step is inside its places)."""
    for op in plan.get("ops", []):
        root, rel, upper = str(op.get("root", "")), str(op.get("path", "")), str(op.get("upper", ""))
        if not root.startswith("/") or not within_any(root, roots):
            return f"a step in {root!r}, outside {', '.join(roots)}"
        if rel.startswith("/") or ".." in rel.split("/") or not rel:
            return f"a step at {rel!r}"
        if upper and not within_any(upper, areas):
            return f"a step taking its files from {upper!r}"
    return ""


def _read_journal(lines: list[str]) -> tuple[dict[str, Any] | None, dict[int, tuple[list[Applied], list[Conflict]]]]:
    if not lines:
        return None, {}
    try:
        plan = json.loads(lines[0])
    except ValueError:
        return None, {}  # torn before it was complete: nothing was changed yet
    done: dict[int, tuple[list[Applied], list[Conflict]]] = {}
    for line in lines[1:]:
        try:
            step = json.loads(line)
            done[int(step["done"])] = (
                [Applied.of(a) for a in step.get("applied", [])],
                [Conflict(str(p), str(w)) for p, w in step.get("conflicts", [])],
            )
        except (ValueError, KeyError, TypeError):
            continue  # a torn last line: that step is checked again
    return plan, done
