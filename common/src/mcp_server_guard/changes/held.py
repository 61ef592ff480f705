"""Change sets held for a person's answer in a later call (a client that cannot be asked mid-call: ``held``):
:class:`Held`, and :class:`HeldSets`, which keeps them bounded in number and bytes and drops them after
``held_seconds``.

``changes.transactions`` holds a change set when its judgement asks and nobody can be asked now; ``apply_held``
there judges one again against the tree as it is then and applies it.
"""

from __future__ import annotations

import os
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mcp_server_guard.changes.changeset import MAX_ENTRIES, NO_RENAMES, ChangeSet, Renamed, walk_real
from mcp_server_guard.files.trees import own_dirs_as_found

if TYPE_CHECKING:  # (the judging modules load with the first change to judge: issue 44)
    from mcp_server_guard.changes.effects import Judgement
    from mcp_server_guard.policy import EffectsPolicy

__all__ = ["Held", "HeldSets"]


@dataclass
class Held:
    """A change set waiting for a person's answer in a later call."""

    id: str
    name: str  # the copy's name in the areas
    audit_id: str  # of the call whose command made it
    started_ns: int
    shown: str  # the command, as shown
    question: str
    asks: list[str]  # the questions the person approves with a yes
    summary: str
    bytes: int
    expires: float  # time.monotonic()
    # A background job's: the paths as its looks left them (its own, never conflicts) — its end is then recorded
    # under the job's id with its looks; and the upper inodes of names of linked files its tree moves made.
    baseline: dict[str, int] = field(default_factory=dict)
    moved: Renamed = NO_RENAMES


@own_dirs_as_found()
def _kept_bytes(sets: Sequence[ChangeSet], limit: int) -> int:
    """The disk the upper layers of ``sets`` take (walked by descriptor, no link followed), counted up to just
    past ``limit``."""
    total = 0
    for changes in sets:
        try:
            fd = os.open(changes.upper, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            for _path, st in walk_real(fd, "", [MAX_ENTRIES], ours=True):
                total += st.st_blocks * 512
                if total > limit:
                    return total
        except OSError:
            continue
        finally:
            os.close(fd)
    return total


class HeldSets:
    """The change sets of one server's calls waiting for a yes (see the module docstring). ``discard``: removes a
    dropped one's copy."""

    def __init__(self, policy: EffectsPolicy, discard: Callable[[str], None]) -> None:
        self.policy, self.discard = policy, discard
        self._held: dict[str, Held] = {}
        self._lock = threading.Lock()

    def hold(
        self, name: str, audit_id: str, started_ns: int, shown: str, judgement: Judgement, sets: Sequence[ChangeSet]
    ) -> Held | None:
        """Keep the set waiting for a yes; None when the bounds drop it at once (it alone is over them)."""
        held = Held(
            id=f"c{secrets.token_hex(4)}",
            name=name,
            audit_id=audit_id,
            started_ns=started_ns,
            shown=shown,
            question=judgement.question,
            asks=list(judgement.asks),
            summary=judgement.summary,
            # Every byte the held copy keeps on disk (refused files, moved ones and all), not only what would land.
            bytes=max(judgement.counts.bytes, _kept_bytes(sets, self.policy.held_max_bytes)),
            expires=time.monotonic() + self.policy.held_seconds,
        )
        with self._lock:
            self._held[held.id] = held
            dropped = self._bound()
        for old in dropped:
            self.discard(old.name)
        return None if held in dropped else held

    def _bound(self) -> list[Held]:
        """Drop what expired, then the oldest past the bounds; returns what was dropped (lock held)."""
        now = time.monotonic()
        dropped = [h for h in self._held.values() if h.expires <= now]
        for held in dropped:
            del self._held[held.id]
        while self._held and (
            len(self._held) > self.policy.held_max
            or sum(h.bytes for h in self._held.values()) > self.policy.held_max_bytes
        ):
            oldest = min(self._held.values(), key=lambda h: h.expires)
            dropped.append(self._held.pop(oldest.id))
        return dropped

    def get(self, held_id: str) -> Held | None:
        with self._lock:
            dropped = self._bound()
            found = self._held.get(held_id)
        for old in dropped:
            self.discard(old.name)
        return found

    def all(self) -> list[Held]:
        with self._lock:
            dropped = self._bound()
            found = list(self._held.values())
        for old in dropped:
            self.discard(old.name)
        return found

    def pop(self, held_id: str) -> Held | None:
        with self._lock:
            return self._held.pop(held_id, None)

    def clear(self) -> None:
        with self._lock:
            self._held.clear()
