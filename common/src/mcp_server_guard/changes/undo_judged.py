"""What an undo puts back, judged where it lands now, as a write of it now would be.

Threat (red team 83 F4): an undo is a writer too, and the tree it puts a file back into is not the tree the file
was judged in. Call 1 writes ``shaped/config`` with ``core.fsmonitor`` into a plain directory (nothing to judge),
call 2 takes the key out, call 3 makes ``shaped/`` a git dir and a ``w/.git`` file naming it (judged with the
harmless config: applied). ``mcp-guard undo`` of call 2 then put the fsmonitor config back into a git dir: the
user's next ``git status`` ran the program. So every file an undo puts back (a file, a link, each file of a tree)
is laid out in a scratch directory of the history's own and judged by ``effects.judge`` against the tree as it is
now; what a command could not write there (refused, or a config landed only with keys taken out) refuses the undo,
which then changes nothing. Of a file bigger than ``_READ_MAX`` (or past ``_BYTES_MAX`` of them all) the part
read is laid out, and it refuses the undo where its content is what the judgement reads (``by_content``). Paths in
git's own directories (a ``.git`` component) are put back as git had them: they are not laid out
(``checkouts.odd_path``).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from mcp_server_guard.changes.changeset import MAX_ENTRIES, Change, ChangeSet
from mcp_server_guard.changes.checkouts import odd_path, rounds
from mcp_server_guard.changes.effects import judge, judge_laid_out
from mcp_server_guard.changes.git_refs import Later
from mcp_server_guard.changes.plan import Op
from mcp_server_guard.files.history import HistoryStore
from mcp_server_guard.files.treelock import fresh, tree_lock
from mcp_server_guard.paths import printable
from mcp_server_guard.policy import EffectsPolicy, Policy
from mcp_server_guard.protected import Protection

__all__ = [
    "Judged",
    "Rechecks",
    "UndoAsks",
    "UndoRefused",
    "judged_restores",
    "rechecks_for",
    "refused_restores",
    "undo_locked",
    "undo_refusals",
]

_READ_MAX = 16 << 20  # bytes of one file put back that are read to judge it ...
_BYTES_MAX = 256 << 20  # ... and of them all
_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_LINK, _FILE, _EXECUTABLE = 0o120000, 0o100644, 0o100755


def undo_refusals(
    history: HistoryStore, ops: Sequence[Op], protection: Protection, policy: EffectsPolicy, roots: Sequence[str]
) -> list[str]:
    """Why the undo ``ops`` may not run (each path and its reason; none: it may): what it puts back, judged."""
    refused = refused_restores(history, ops, protection, policy, roots)
    return [why for _key, why in sorted(refused.items())]


def refused_restores(
    history: HistoryStore, ops: Sequence[Op], protection: Protection, policy: EffectsPolicy, roots: Sequence[str]
) -> dict[tuple[str, str], str]:
    """The steps of ``ops`` that put back what may not be written where it lands now, by (root, path of the step):
    why, in words (the path in the step's tree, when it puts back a tree). ``("", "")``: none could be judged."""
    return judged_restores(history, ops, protection, policy, roots)[0]


def judged_restores(
    history: HistoryStore, ops: Sequence[Op], protection: Protection, policy: EffectsPolicy, roots: Sequence[str]
) -> tuple[dict[tuple[str, str], str], list[str]]:
    """``refused_restores``, and the questions a command's write of what ``ops`` put back would be asked now (what
    runs it later, a program it shadows: red team 84 O1 — a package.json's hook keys put back into a project that
    has set up its hooks since). Never for what the undo gives back as it was: losses, emptied files, executables."""
    laters: dict[str, list[Later]] = {}
    step: dict[tuple[str, str], str] = {}  # (root, path put back) -> the path of its step
    big: set[tuple[str, str]] = set()
    budget = [_BYTES_MAX, MAX_ENTRIES]  # bytes read, paths walked: what is left of each
    try:
        for op in ops:
            record = op.record
            if op.kind not in ("restore", "swap") or record is None or not record.before:
                continue
            for path, mode, data, whole in _put_back(history, record.before, op.path, budget):
                if not odd_path(path):
                    laters.setdefault(op.root, []).append(Later("the undo", path, mode, data))
                    step[(op.root, path)] = op.path
                    if not whole:
                        big.add((op.root, path))
    except _TooMany:
        return {("", ""): f"it puts back more than {MAX_ENTRIES:,} paths, more than one judgement reads"}, []
    refused: dict[tuple[str, str], str] = {}
    asks: list[str] = []
    for root, items in laters.items():
        for group in rounds(items):
            try:
                sub = judge_laid_out(root, group, str(history.directory), protection, policy, roots, executables=False)
            except OSError as exc:
                return {("", ""): f"what it puts back could not be judged ({exc.strerror or exc})"}, []
            asks += [printable(ask) for ask in sub.asks if printable(ask) not in asks]
            whys = dict(sub.refused)
            whys.update({key: f"it would land only without {', '.join(sub.dropped_keys.get(key[1], ['some keys']))}"
                         for key in sub.rewritten})  # fmt: skip
            whys.update({key: "too large to judge by what it holds" for key in sub.by_content & big})
            for (_root, path), why in whys.items():
                refused.setdefault((root, step.get((root, path), path)), printable(f"{path} ({why})"))
    return refused, asks


def _put_back(
    history: HistoryStore, entry: str, path: str, budget: list[int]
) -> Iterator[tuple[str, int, bytes, bool]]:
    """What the history entry ``entry`` puts back at ``path``: each file and link (its path, git's mode, its bytes,
    whether they are whole), a tree's walked without following a link; a FIFO or a device is never opened."""
    top = os.open(history.directory, _DIR)
    try:
        for name in (f"{entry}.data", f"{entry}.tree"):
            with contextlib.suppress(FileNotFoundError):
                os.lstat(name, dir_fd=top)
                break
        else:
            return  # (what it kept is gone: the undo's own check says so)
        yield from _entry(top, name, path, budget)
    finally:
        os.close(top)


def _entry(dirfd: int, name: str, path: str, budget: list[int]) -> Iterator[tuple[str, int, bytes, bool]]:
    st = os.lstat(name, dir_fd=dirfd)
    budget[1] -= 1
    if budget[1] < 0:
        raise _TooMany
    if stat.S_ISLNK(st.st_mode):
        yield path, _LINK, os.fsencode(os.readlink(name, dir_fd=dirfd)), True
    elif stat.S_ISREG(st.st_mode):
        data = b""
        with contextlib.suppress(PermissionError):  # (mode 000, run as the user: judged by its name alone)
            fd = os.open(name, _OPEN, dir_fd=dirfd)
            try:
                data = _read(fd, budget)
            finally:
                os.close(fd)
        yield path, _EXECUTABLE if st.st_mode & 0o111 else _FILE, data, len(data) == st.st_size
    elif stat.S_ISDIR(st.st_mode):
        try:
            fd = os.open(name, _DIR, dir_fd=dirfd)
        except PermissionError:  # (a directory no one but root may list: what it holds no one reads either)
            return
        try:
            for child in sorted(os.listdir(fd)):
                yield from _entry(fd, child, f"{path}/{child}", budget)
        finally:
            os.close(fd)


def _read(fd: int, budget: list[int]) -> bytes:
    """At most ``_READ_MAX`` bytes of ``fd``, and no more than is left of ``budget[0]`` (the bytes of every file)."""
    chunks: list[bytes] = []
    size, most = 0, max(0, min(_READ_MAX, budget[0]))
    while size < most and (chunk := os.read(fd, min(1 << 20, most - size))):
        chunks.append(chunk)
        size += len(chunk)
    budget[0] -= size
    return b"".join(chunks)


class _TooMany(Exception):
    """More paths to put back than one judgement reads."""


class UndoAsks(Exception):
    """An undo stopped before changing anything: what it puts back would be asked about as a command's write of it
    now (the person running it says yes with ``--yes``)."""

    def __init__(self, asks: list[str]) -> None:
        super().__init__("; ".join(asks))
        self.asks = asks


class UndoRefused(Exception):
    """An undo stopped before changing anything: what it puts back may not be written where it lands now."""

    def __init__(self, reasons: list[str]) -> None:
        super().__init__("; ".join(reasons))
        self.reasons = reasons


@dataclass(frozen=True)
class Judged:
    """``Applier.undo``'s ``judged``: raises UndoRefused with ``undo_refusals``' reasons, if any; else UndoAsks with
    the questions a command's write of it would be asked, unless the person said ``yes`` to them."""

    history: HistoryStore
    protection: Protection
    policy: EffectsPolicy
    roots: Sequence[str]
    yes: bool = False

    def __call__(self, ops: Sequence[Op]) -> None:
        refused, asks = judged_restores(self.history, ops, self.protection, self.policy, self.roots)
        if refused:
            raise UndoRefused([why for _key, why in sorted(refused.items())])
        if asks and not self.yes:
            raise UndoAsks(asks)

    def left(self, ops: Sequence[Op]) -> str:
        """``Applier.stale`` during the undo: its steps left judged again (red team 84 F2: a git dir made while a
        long undo let another writer in, then its config put back into it)."""
        refused, asks = judged_restores(self.history, ops, self.protection, self.policy, self.roots)
        reasons = [why for _key, why in sorted(refused.items())]
        reasons += [f"it would now ask: {ask}" for ask in asks if not self.yes]
        return f"what it puts back is refused where it lands now: {'; '.join(reasons[:5])}" if reasons else ""

    def restores(self, ops: Sequence[Op]) -> dict[tuple[str, str], str]:
        """``Applier.restores``: what going back would put back that is refused where it lands now."""
        return refused_restores(self.history, ops, self.protection, self.policy, self.roots)


@dataclass(frozen=True)
class Rechecks:
    """``Applier.stale`` and ``Applier.restores`` for a run no live judgement watches: a dead server's apply or
    undo, finished at a start or by ``mcp-guard undo`` (``recovery.recover``).

    Threat (red team 84 F3): a server killed half way through an apply, another server's write in between (it
    made ``shaped/`` a git dir), and the next start finished the plan: the config judged for a plain directory
    landed in the git dir. Its steps left are judged against the tree now, as the change set they come from (each
    step's change, laid out in the copy it takes it from) and as what they put back; one refused, or a config that
    would now be rewritten, sends the run back instead (``Applier._steps``). A step that moves a new directory
    whole is judged by that directory's own path."""

    history: HistoryStore
    protection: Protection
    policy: EffectsPolicy
    roots: Sequence[str]

    def stale(self, left: Sequence[Op]) -> str:
        reasons = undo_refusals(self.history, left, self.protection, self.policy, self.roots)
        made: dict[tuple[str, str], list[Change]] = {}
        for op in left:
            if op.change is not None and op.upper:
                made.setdefault((op.root, op.upper), []).append(op.change)
        if made:
            sets = [
                ChangeSet(root=root, upper=upper, changes=tuple(changes)) for (root, upper), changes in made.items()
            ]
            try:
                now = judge(sets, self.protection, self.policy, self.roots, checkouts=False)
            except (OSError, RecursionError, ValueError) as exc:
                return f"its steps left could not be judged again ({exc})"
            reasons += [printable(f"{path} ({why})") for (_root, path), why in sorted(now.refused.items())]
            reasons += [printable(f"{path} (a git config now)") for _root, path in sorted(now.rewritten)]
        return f"what its steps left would write is refused now: {'; '.join(reasons[:5])}" if reasons else ""

    def restores(self, ops: Sequence[Op]) -> dict[tuple[str, str], str]:
        return refused_restores(self.history, ops, self.protection, self.policy, self.roots)


def rechecks_for(
    history: HistoryStore, roots: Sequence[str], policy: Policy | None = None
) -> tuple[Callable[[Sequence[Op]], str], Callable[[Sequence[Op]], dict[tuple[str, str], str]]]:
    """``recovery.recover``'s ``rechecks``: under ``policy`` (the packaged one when None), with its protection."""
    from mcp_server_guard.policy import load_policy  # noqa: PLC0415 - only when a dead run is finished
    from mcp_server_guard.protected import protection_for  # noqa: PLC0415

    policy = policy or load_policy()
    checks = Rechecks(history, protection_for(policy, history_dir=history.directory), policy.effects, roots)
    return checks.stale, checks.restores


@contextlib.contextmanager
def undo_locked(
    judged: Judged | None, ops: Sequence[Op], devices: Sequence[int], lock: contextlib.AbstractContextManager[object]
) -> Iterator[None]:
    """Hold ``lock`` and the tree lock of ``devices`` with ``judged`` (what the undo ``ops`` put back; raises
    UndoRefused) still true of the tree. Threat (red team 85 F4): an undo of 200,000 paths judged under the tree
    lock kept every other server's writer waiting past its bound: judged as a change set is (``treelock.fresh``)."""
    if judged is None:  # (nothing put back is judged: a run going back over itself)
        with lock, tree_lock(devices):
            yield
        return
    with fresh(devices, lambda: judged(ops), lock):
        yield
