"""The call an apply or an undo is for, as its record tells it (:class:`What`).

Made by the tool that ran the command (``tools.shell_service``: the command and where it ran; ``tools.shell_jobs``: a
job's end, or one of its looks), by an undo (``changes.apply.Applier.undo``: the call it undoes) and by a run going
back (``Applier._reverse``: the run it goes back over); the judgement adds what the result said
(``changes.transactions``: its summary and counts, the only copies it keeps) and the apply the project's own
attributes it carries. It is written as JSON in two places, the same way: the apply's journal (``changes.plan.Plan``,
read back by :meth:`What.of` when a dead server's run is finished) and the call's record (``files.calls``: its fields
beside the record's own, read by ``mcp-guard history`` and ``mcp-guard undo``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, fields

from mcp_server_guard.changes.narrow import exact, flag, items, mapping, number, optional_text
from mcp_server_guard.changes.summary import Counts
from mcp_server_guard.changes.xattrs import Xattrs

__all__ = ["What"]


@dataclass(frozen=True)
class What:
    """What one call was, for its record. A field that is ``None`` (or empty, or False) is no key of the JSON; the
    fields are written in this order (the order each producer's keys always had)."""

    tool: str | None = None  # the tool that made the call (shell_exec; undo)
    command: str | None = None  # the command, as shown to the person
    cwd: str | None = None  # where it ran, as shown
    job: str | None = None  # a job's look: the job
    look: bool = False  # a look at a running job (its changes so far)
    held: str | None = None  # the held change set this call applies
    for_call: str | None = None  # the call that made it
    undoes: str | None = None  # an undo: the call it undoes
    back: str | None = None  # a run going back: the run it goes back over
    summary: str | None = None  # what the call's result said it changed, in the same words
    counts: Counts | None = None  # and its counts
    only_copies: tuple[str, ...] = ()  # the paths whose pre-image is the only copy of that work (git has none)
    carried: Xattrs = ()  # the project's own user.overlay.* attributes the run lands (name, value)

    def json(self) -> dict[str, object]:
        """As the journal's plan and the call's record hold it."""
        counts = dataclasses.asdict(self.counts) if self.counts is not None else None
        pairs: tuple[tuple[str, object], ...] = (
            ("tool", self.tool), ("command", self.command), ("cwd", self.cwd), ("job", self.job),
            ("look", True if self.look else None), ("held", self.held), ("for_call", self.for_call),
            ("undoes", self.undoes), ("back", self.back), ("summary", self.summary), ("counts", counts),
            ("only_copies", list(self.only_copies) if self.only_copies else None),
            ("carried", [[name, value.hex()] for name, value in self.carried] if self.carried else None),
        )  # fmt: skip
        return {name: value for name, value in pairs if value is not None}

    @classmethod
    def of(cls, data: Mapping[str, object]) -> What:
        """Read back from a journal's plan (TypeError, ValueError: not one of ours)."""
        counts = data.get("counts")
        return cls(
            tool=optional_text(data.get("tool")), command=optional_text(data.get("command")),
            cwd=optional_text(data.get("cwd")), job=optional_text(data.get("job")),
            look=flag(data.get("look", False)), held=optional_text(data.get("held")),
            for_call=optional_text(data.get("for_call")), undoes=optional_text(data.get("undoes")),
            back=optional_text(data.get("back")), summary=optional_text(data.get("summary")),
            counts=None if counts is None else _counts(mapping(counts)),
            only_copies=tuple(exact(path, str) for path in items(data.get("only_copies"))),
            carried=tuple(_carried(pair) for pair in items(data.get("carried"))),
        )  # fmt: skip


_COUNTS = tuple(f.name for f in fields(Counts))


def _counts(data: Mapping[str, object]) -> Counts:
    return Counts(**{name: number(data.get(name, 0)) for name in _COUNTS})


def _carried(pair: object) -> tuple[str, bytes]:
    name, value = items(pair)
    return exact(name, str), bytes.fromhex(exact(value, str))
