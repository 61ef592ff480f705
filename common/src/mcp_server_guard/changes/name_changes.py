"""The name changes this process's writer made: a ctime they alone moved is no change to the file (red team 9 F3).

Making or taking away a name of a file (a hard link; a deletion, kept by moving the file into the history store; a
rename) moves the file's ctime, though nothing it holds changed. Another call running meanwhile, finding that
ctime later than its start, would take it for someone else's change to the file (through every other name it has)
and refuse to apply over it. So each such step of this process notes the inode, its ctime before (looked at with
the file's lock held: red team 10 F1) and what the step left (its ctime, size, modification time and links, looked
at after it); a ctime that only these steps moved since a time is as it was then.

Only this process's own steps are known: another process's name change is a change (the safe side).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import threading
import time
from collections import OrderedDict
from pathlib import Path

from mcp_server_guard.files import widened

__all__ = [
    "TICK_NS",
    "dir_time_at",
    "keep_looks_in",
    "keep_notes_in",
    "note",
    "note_dir",
    "note_put_back",
    "only_names",
]

# A file system stamps ctime from the coarse clock, up to a tick (4 ms at HZ=250, 10 ms at HZ=100) behind the fine
# clock read just after the step.
TICK_NS = 20_000_000
_MAX_FILES = 20_000  # the oldest forgotten first: a ctime no longer known to be ours is a change again
_lock = threading.Lock()
# inode -> [(its ctime before a name step, what the step left: ``_mark``)]
_done: OrderedDict[tuple[int, int], list[tuple[int, tuple[int, int, int, int]]]] = OrderedDict()
# A directory an apply of this process changed entries in: inode -> [(ctime, mtime before, apply began, done at)]
_dirs: OrderedDict[tuple[int, int], list[tuple[int, int, int, int]]] = OrderedDict()
_LOOKS_BYTES = 256 << 10  # past this, the file of looks is compacted (``_compact``)


class _Looks:
    """Where the looks into directories are kept for every process (``keep_looks_in``), and what was read of it."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self.seen: tuple[int, ...] = ()
        self.found: dict[tuple[int, int], list[tuple[int, tuple[int, int, int, int]]]] = {}


_looks = _Looks()


def keep_looks_in(path: Path) -> None:
    """Keep the looks into directories (see :func:`note`) in the file ``path`` as well (a history store's), for every
    process that uses it: a later call's look into a project directory of mode 000 moved its ctime, and the undo of
    an earlier call that made it, in another process (``mcp-guard undo``), took that for someone else's change."""
    _looks.path = path


def keep_notes_in(history: Path) -> None:
    """Where the applies of the history store ``history`` keep, for every process, what they note: the looks into
    directories (``keep_looks_in``) and the modes they widen for one step (``files.widened``). Said by every
    ``Applier``, and at a server's start before any (its looks, and the modes put back, go there from the start)."""
    keep_looks_in(history / "looks")
    widened.keep_in(history / "widened")


def _kept_look(before: os.stat_result, mark: tuple[int, int, int, int]) -> None:
    _kept_look_of(before.st_dev, before.st_ino, before.st_ctime_ns, mark)


def _kept_look_of(dev: int, ino: int, ctime_ns: int, mark: tuple[int, int, int, int]) -> None:
    if (path := _looks.path) is None:
        return
    line = json.dumps([dev, ino, ctime_ns, *mark]) + "\n"
    with contextlib.suppress(OSError):
        if os.lstat(path).st_size > _LOOKS_BYTES:
            _compact(path)
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, line.encode())  # (one write of one short line: whole, between other processes' lines)
        finally:
            os.close(fd)


def _compact(path: Path) -> None:
    """The file of looks past its bound, made small again: each directory's looks in a row (each from the ctime the
    one before left) one look, from the first one's ctime to the last one's mark; the directories looked at longest
    ago dropped where even that is too much (red team 66 F3: a look a later undo needed had been dropped whole)."""
    merged: dict[tuple[int, int], list[tuple[int, tuple[int, int, int, int]]]] = {}
    for key, steps in _read_looks([path.with_suffix(".old"), path]).items():
        chains: list[tuple[int, tuple[int, int, int, int]]] = []
        for before, mark in sorted(steps):
            joined = next((i for i, (_b, m) in enumerate(chains) if m[0] == before), -1)
            if joined >= 0:
                chains[joined] = (chains[joined][0], mark)
            else:
                chains.append((before, mark))
        merged[key] = chains[-16:]
    lines = [json.dumps([dev, ino, b, *m]) for (dev, ino), chains in merged.items() for b, m in chains]
    lines.sort(key=lambda line: json.loads(line)[3])  # (the newest marks last)
    while lines and sum(len(line) + 1 for line in lines) > _LOOKS_BYTES // 2:
        del lines[: max(1, len(lines) // 8)]
    temp = path.with_name(f".{path.name}.{os.urandom(3).hex()}.tmp")
    temp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    os.replace(temp, path)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path.with_suffix(".old"))


def _read_looks(files: list[Path]) -> dict[tuple[int, int], list[tuple[int, tuple[int, int, int, int]]]]:
    found: dict[tuple[int, int], list[tuple[int, tuple[int, int, int, int]]]] = {}
    for path in files:
        with contextlib.suppress(OSError, ValueError):
            for line in path.read_text(encoding="utf-8").splitlines():
                with contextlib.suppress(ValueError, TypeError):
                    dev, ino, b, *mark = (int(v) for v in json.loads(line))
                    if len(mark) == 4:
                        found.setdefault((dev, ino), []).append((b, (mark[0], mark[1], mark[2], mark[3])))
    return found


def _kept_looks(key: tuple[int, int]) -> list[tuple[int, tuple[int, int, int, int]]]:
    """The looks kept (by any process) into the directory ``key``."""
    if (kept := _looks.path) is None:
        return []
    files = [kept.with_suffix(".old"), kept]
    seen: list[int] = []
    for path in files:
        with contextlib.suppress(OSError):
            st = os.lstat(path)
            seen += [st.st_ino, st.st_size, st.st_mtime_ns]
    if tuple(seen) != _looks.seen:
        _looks.seen, _looks.found = tuple(seen), _read_looks(files)
    return list(_looks.found.get(key, ()))


def note(before: os.stat_result, after: os.stat_result) -> None:
    """A name of the regular file ``before`` was made or taken away just now: ``after`` is the file then (looked at
    through a name of it or a descriptor). Or the directory ``before`` of the user's, with no permission for them,
    was let in to be looked into and its mode given back (``trees.own_dirs_as_found``): only its ctime moved."""
    if not _noted_kind(before) or (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
        return
    if (after.st_size, after.st_mtime_ns, after.st_mode) != (before.st_size, before.st_mtime_ns, before.st_mode):
        # Threat: a write by a program that takes no lock, made while the step ran (a pre-image copied whole takes
        # long), taken for the step's own name change (red team 11 F1): not noted, it is a change.
        return
    key = (before.st_dev, before.st_ino)
    if stat.S_ISDIR(before.st_mode):
        _kept_look(before, _mark(after))
    with _lock:
        steps = _done.setdefault(key, [])
        steps.append((before.st_ctime_ns, _mark(after)))
        del steps[:-16]
        _done.move_to_end(key)
        while len(_done) > _MAX_FILES:
            _done.popitem(last=False)


def note_put_back(was: tuple[int, int, int, int, int, int], now: os.stat_result) -> None:
    """A mode a dead server widened was put back at this start (``widened.put_back``): ``was`` the entry then
    (dev, ino, mode, size, mtime, ctime), ``now`` as it is: where only its ctime moved, that is no change (a step
    finished after the crash took it for someone else's: red team 64 F2)."""
    dev, ino, mode, size, mtime, ctime = was
    if (now.st_dev, now.st_ino, stat.S_IMODE(now.st_mode), now.st_size, now.st_mtime_ns) != (
        dev,
        ino,
        mode,
        size,
        mtime,
    ):
        return
    if stat.S_ISDIR(now.st_mode):
        _kept_look_of(dev, ino, ctime, _mark(now))
    with _lock:
        steps = _done.setdefault((dev, ino), [])
        steps.append((ctime, _mark(now)))
        del steps[:-16]


def _noted_kind(st: os.stat_result) -> bool:
    return stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)


def _mark(st: os.stat_result) -> tuple[int, int, int, int]:
    """What a name step left of a file: its ctime, and its size, modification time and links (a new file given the
    number of one freed meanwhile, red team 10 F7, has the same ctime at most by a clock tick's chance)."""
    return (st.st_ctime_ns, st.st_size, st.st_mtime_ns, st.st_nlink)


def only_names(st: os.stat_result, since_ns: int, *, exactly: bool = False) -> bool:
    """Whether every change of ``st``'s ctime after ``since_ns`` was a name change this process made (``exactly``:
    back to a ctime of exactly ``since_ns``, one an earlier apply of a running job left, or a look before a wait)."""
    if not _noted_kind(st):
        return False
    with _lock:
        steps = list(_done.get((st.st_dev, st.st_ino), ()))
        if stat.S_ISDIR(st.st_mode):
            steps += _kept_looks((st.st_dev, st.st_ino))
    # Back from the ctime it has now, along every step that left a ctime (the latest: the file as it is) from the
    # one before it — each path, not the first found: the looks a process knows one by one may be one look in the
    # compacted file (red team 67: an undo refused).
    todo: list[tuple[int, tuple[int, int, int, int] | None]] = [(st.st_ctime_ns, _mark(st))]
    seen: set[int] = set()
    while todo:
        ctime, found = todo.pop()
        if ctime == since_ns or (ctime < since_ns and not exactly):
            return True
        if ctime in seen:
            continue
        seen.add(ctime)
        todo += [(b, None) for b, left in steps if (left == found if found else left[0] == ctime) and b < ctime]
    return False


def note_dir(real: os.stat_result, ctime_ns: int, mtime_ns: int, began_ns: int) -> None:
    """An apply of this process that began at ``began_ns`` changed what is in the directory ``real``, which had
    ``ctime_ns`` and ``mtime_ns`` when it read it (before it began): done just now."""
    done = time.time_ns()
    with _lock:
        steps = _dirs.setdefault((real.st_dev, real.st_ino), [])
        steps.append((ctime_ns, mtime_ns, began_ns, done))
        del steps[:-16]
        _dirs.move_to_end((real.st_dev, real.st_ino))
        while len(_dirs) > _MAX_FILES:
            _dirs.popitem(last=False)


def dir_time_at(real: os.stat_result, ctime_ns: int, since_ns: int) -> int | None:
    """The modification time the directory ``real`` had at ``since_ns``, when every change after it up to the
    ``ctime_ns`` read since was an apply of this process (None: not known)."""
    with _lock:
        steps = list(_dirs.get((real.st_dev, real.st_ino), ()))
    mtime = None
    # (chained back: each change's ctime stamped within an apply of ours, from the ctime the apply read)
    for _ in range(len(steps) + 1):
        if ctime_ns <= since_ns:
            return mtime
        found = next(
            ((c, m) for c, m, began, done in steps if began - TICK_NS <= ctime_ns <= done and c < ctime_ns), None
        )
        if found is None:
            return None
        ctime_ns, mtime = found
    return None
