"""The journal of an apply: its plan and the steps done so far, on disk until the apply is finished.

Before the first change the whole plan is written to ``.journal/apply-<auditId>.json`` in the history store
(fsynced, locked for as long as its process applies: :class:`Journal`); each finished step appends a line with
what it applied and its conflicts, read back by :func:`read_journal` when a dead server's apply is finished.

Every line of a journal is sealed: an HMAC-SHA256, with a key only the servers of the user read (``.key`` in the
history store: hidden from every server's commands, never inside a root), over the line and the seal of the line
before it (the first over the journal's name). Threat: a journal forged or spliced by someone who could write the
history store (a command of another server whose root holds it) that the next start would finish: a line whose
seal does not check is not ours, and its journal is left alone.

The plan itself, and what each step did, are ``changes.plan``'s: the journal takes and gives back typed values
(:class:`Plan`, :class:`Applied`, :class:`Conflict`), their JSON made and read here, at its edge.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from mcp_server_guard import registry
from mcp_server_guard.changes import narrow
from mcp_server_guard.changes.narrow import items, mapping, text
from mcp_server_guard.changes.plan import Applied, Conflict, Plan
from mcp_server_guard.files.history import JOURNALS  # the apply journals, in the history store
from mcp_server_guard.files.kept import fsync_dir, write_all
from mcp_server_guard.linux import allocate_beyond_end
from mcp_server_guard.paths import private_dirs

__all__ = ["JOURNALS", "Done", "Journal", "Replay", "journal_key", "journal_name", "read_journal"]

KEY = ".key"  # in the history store: what seals the journals where the registry cannot be made (registry.sealing_key)
log = logging.getLogger("mcp_server_guard.changes")


def journal_key(history_dir: Path) -> bytes:
    """The key that seals the journals of this history store: the user's (``registry.user_key``), never one kept
    beside the journals it seals (red team 95 F1: a command made another server's state directory, gone from
    ``/tmp``, with its key and journals in it); in the history store only where the registry cannot be made (said
    on stderr)."""
    return registry.sealing_key(history_dir)


def journal_name(audit_id: str) -> str:
    """The file name of the apply (or undo) journal of call ``audit_id``."""
    return f"apply-{audit_id}.json"


def _seal(key: bytes, before: bytes, payload: bytes) -> bytes:
    return hmac.new(key, before + b"\n" + payload, hashlib.sha256).hexdigest().encode()


def _first(path: Path) -> bytes:
    return path.name.encode("utf-8", "surrogateescape")


class Journal:
    """The plan of one apply, and the steps done so far (see the module docstring): each line sealed."""

    def __init__(self, path: Path, fd: int, key: bytes, last: bytes) -> None:
        self.path, self.fd, self.key, self.last = path, fd, key, last
        self.size = os.fstat(fd).st_size  # where the next line goes: a line that cannot be written whole is cut off

    @classmethod
    def create(cls, directory: Path, plan: Plan, baseline: dict[str, int], key: bytes) -> Journal:
        """The journal of ``plan`` (run from ``baseline``: see ``Applier.apply``), its first line written."""
        private_dirs(directory)
        path = directory / journal_name(plan.audit_id)
        # Written whole under a temp name, then renamed: a journal that exists names its whole plan (and is locked).
        temp = directory / f".apply-{plan.audit_id}.{os.getpid()}.tmp"
        fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        journal = cls(path, fd, key, _first(path))
        linked = False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            journal._append(plan.json(baseline))
            # Room for the lines to come, in the journal's own blocks (beyond its end: its size stays): a disk that
            # fills up midway — another program taking what the run gives back — cannot refuse the rollback's line.
            allocate_beyond_end(fd, min(_ROOM_MAX, 4 * journal.size + _ROOM_MIN))
            os.fsync(fd)
            os.link(temp, path)  # never over another run's kept journal (red team 75 F2: a job's next look)
            linked = True
            temp.unlink()
            fsync_dir(directory)
        except BaseException:
            if linked:  # (red team 77 F1: a journal left under its name is a plan the next start would carry out)
                path.unlink(missing_ok=True)
            os.close(fd)
            temp.unlink(missing_ok=True)
            raise
        return journal

    def _append(self, data: dict[str, object]) -> None:
        """One sealed line, written whole or not at all. Threat (red team 73): a disk full midway left a torn line
        that the next one was written after, and the seal chain moved on past a line that was never written — every
        later line then failed its check and the journal was left alone, its run half done. A line that cannot be
        written whole is cut off again (truncating needs no room) and the chain stays at the last line written."""
        payload = json.dumps(data, ensure_ascii=False).encode("utf-8", "surrogateescape")
        seal = _seal(self.key, self.last, payload)
        line = payload + b"\t" + seal + b"\n"
        try:
            write_all(self.fd, line)
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, self.size)
            raise
        self.last, self.size = seal, self.size + len(line)

    def done(self, index: int, records: list[Applied], conflicts: list[Conflict], *, back: bool = False) -> None:
        """Step ``index`` is done (of the rollback, ``back``): what it applied and its conflicts. Not fsynced: a
        kill leaves it in the page cache; a power cut may lose it, and the step, found done, is recorded again.
        Raises OSError when it cannot be written (the disk is full: the run goes back)."""
        self._append({"back" if back else "done": index, "applied": [a.record() for a in records],
                      "conflicts": [c.json() for c in conflicts]})  # fmt: skip

    def rollback(self, plan: Plan, why: str) -> None:
        """From here on the run goes back: ``plan`` undoes what was done (fsynced before its first step, so a
        crash never finishes a run that was being rolled back)."""
        self._append({"rollback": plan.json({}), "why": why})
        os.fsync(self.fd)

    def close(self) -> None:
        self.path.unlink(missing_ok=True)
        os.close(self.fd)


_ROOM_MIN, _ROOM_MAX = 64 << 10, 64 << 20


Done = dict[int, tuple[list[Applied], list[Conflict]]]


@dataclass
class Replay:
    """A journal read back (:func:`read_journal`)."""

    plan: Plan | None = None  # None: torn before it was whole (nothing was changed yet)
    baseline: dict[str, int] = field(default_factory=dict)  # what the run started from (``Plan.json``)
    done: Done = field(default_factory=dict)
    back: Plan | None = None  # the rollback's plan, when the run was going back
    back_done: Done = field(default_factory=dict)
    why: str = ""  # why it was going back
    last: bytes = b""  # the seal of the last line read: the next line's is made over it
    untrusted: str = ""  # why the journal is not ours (a line whose seal does not check)


def read_journal(lines: list[str], key: bytes, path: Path) -> Replay:
    """A journal's lines read back: its plan, the steps done, and the rollback, if it was going back. Each line's
    seal is checked: one torn by a crash (no seal, or cut) is skipped; a whole line whose seal does not check makes
    the journal untrusted (``Replay.untrusted``), and nothing of it is taken."""
    replay = Replay(last=_first(path))
    for number, line in enumerate(lines):
        payload, tab, seal = line.encode("utf-8", "surrogateescape").rpartition(b"\t")
        if not tab or len(seal) != 64:
            if number == 0:  # written whole before it got its name: never torn
                replay.untrusted = "its plan is not sealed"
                return replay
            continue  # a torn line: that step is checked again
        if not hmac.compare_digest(seal, _seal(key, replay.last, payload)):
            replay.untrusted = f"line {number + 1} is not sealed by this history's key"
            replay.plan = None
            return replay
        replay.last = seal
        try:
            data = mapping(json.loads(payload))
            if number == 0:
                replay.plan, replay.baseline = Plan.of(data)
                continue
            if "rollback" in data:
                replay.back, replay.why = Plan.of(mapping(data["rollback"]))[0], text(data.get("why", ""))
                continue
            done = replay.back_done if "back" in data else replay.done
            done[narrow.number(data["back" if "back" in data else "done"])] = (
                [Applied.of(mapping(a)) for a in items(data.get("applied", []))],
                [Conflict.of(c) for c in items(data.get("conflicts", []))],
            )
        except (ValueError, KeyError, TypeError, IndexError):
            replay.untrusted = f"line {number + 1} is sealed but not a journal line"
            replay.plan = None
            return replay
    return replay
