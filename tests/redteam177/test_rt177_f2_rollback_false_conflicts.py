"""Red team 177 F2 (MEDIUM): rolling a session back newest first (docs/agent-cli.md) still stops at UNDO_CONFLICT,
nobody else having touched anything, in two everyday cases the red team 175 answer missed:

(a) the history on another file system than the project (XDG_STATE_HOME on another disk or a tmpfs; the project on
a second disk, a mounted volume): the later call's undo puts the file back as a *copy* (a new inode), and a command's
record has no digest; ``copied_back`` knows file_write's copies only (its ``replaced`` field). Same steps with the
history on the project's file system pass (tests/redteam175).

(b) a later call that made a hard link (``ln a.txt b.txt``): its record names ``b.txt`` only; linking and its undo's
unlinking move ``a.txt``'s ctime, and ``put_back_since`` looks for ``a.txt`` among the later call's ``path``s only
(not ``link``): ``a.txt`` is taken for changed. Control: ``cp a.txt b.txt`` rolls back cleanly.

The user is left with the model's first change, the only way on ``--force`` (which overrides a real edit too). A
person declines every question (none is asked).

Answered: F2b (``put_back_since`` reads each record's link, move and kept names). Left: F2a, strict expected
failures (a command's record keeps no digest of what it left)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from support.boxed import Person, run, shell
from support.fidelity import differences, snapshot
from support.redteam import mcp_guard

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


async def _calls(workspace: Path, commands: list[str]) -> list[str]:
    ids: list[str] = []
    person = Person(False)
    async with shell(workspace, person) as client:
        for command in commands:
            out: dict[str, Any] = await run(client, command, cwd=str(workspace))
            assert out["transaction"] == "applied", (command, out, person.questions)
            ids.append(str(out["auditId"]))
    return ids


def _undo(audit_id: str) -> str:
    done = mcp_guard("undo", audit_id)
    return "" if done.returncode == 0 else f"undo {audit_id}: exit {done.returncode}: {done.stderr.strip()[-300:]}"


async def _rolled_back(workspace: Path, commands: list[str]) -> list[str]:
    before = snapshot(workspace)
    ids = await _calls(workspace, commands)
    failed = [why for why in (_undo(i) for i in reversed(ids)) if why]
    return failed + [str(d) for d in differences(before, snapshot(workspace))]


# Known and left (fail-closed, nothing lost: ``--force`` goes on): a command's file put back as a copy (the history on
# another file system) has no recorded digest to be known as what the call left. Strict: it fails the day it passes.
@pytest.mark.xfail(strict=True, reason="a command's record keeps no digest of what it left (known)")
@pytest.mark.parametrize("second", ["echo two > notes.txt", "rm notes.txt", "echo more >> notes.txt"])
async def test_rollback_with_the_history_on_another_file_system(
    workspace: Path, state_on_tmpfs: Path, second: str
) -> None:
    assert await _rolled_back(workspace, ["echo one > notes.txt", second]) == []


async def test_control_rollback_with_the_history_on_the_same_file_system(workspace: Path) -> None:
    assert await _rolled_back(workspace, ["echo one > notes.txt", "echo two > notes.txt"]) == []


async def test_rollback_after_a_hard_link(workspace: Path) -> None:
    assert await _rolled_back(workspace, ["echo one > a.txt", "ln a.txt b.txt"]) == []


async def test_control_rollback_after_a_copy(workspace: Path) -> None:
    assert await _rolled_back(workspace, ["echo one > a.txt", "cp a.txt b.txt"]) == []
