"""Red team 175 F1 (MEDIUM, a regression of the red team 171/173 answer): rolling a session back newest first — what
docs/agent-cli.md tells a host to do — stops at UNDO_CONFLICT once a later call that changed a file a shell call left
has been undone, though nobody else touched the file; an undo, a redo, then an undo again stops the same way.

``revert.as_left`` now takes any non-directory whose ctime moved after the call for "as the call left it" only by
its content, and a shell call's record has no digest: UNDO_CONFLICT. But the later call's own undo puts the call's
file back by a rename (a pre-image kept whole), which moves the file's ctime; ``put_back_since`` (the time of the last
undo, the answer for directories: red team 40f) is asked for directories only, and ``copied_back`` for file_write's
copies only. The user is left with the model's first change in place, and the only way on is ``--force``, which
overrides a real later edit too. tests/redteam109's control (two commands rolled back newest first) fails at HEAD.

A person declines every question (none is asked). Controls: a single call undone at once; a job undone."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio
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
    return "" if done.returncode == 0 else f"undo {audit_id}: exit {done.returncode}: {done.stderr.strip()[-240:]}"


def _undo_id(undone: str) -> str:
    """The audit id of the undo of call ``undone`` (``mcp-guard history --json`` is not needed: the records)."""
    import json
    import os

    base = Path(os.environ["XDG_STATE_HOME"])
    for record in sorted(base.rglob("calls/*.json")):
        data = json.loads(record.read_text(encoding="utf-8"))
        if data.get("undoes") == undone:
            return str(data["audit_id"])
    raise AssertionError(f"no undo of {undone}")


@pytest.mark.parametrize(
    "second",
    ["echo two > notes.txt", "mv notes.txt moved.txt", "chmod 600 notes.txt", "echo more >> notes.txt"],
)
async def test_two_commands_roll_back_newest_first(workspace: Path, second: str) -> None:
    before = snapshot(workspace)
    first, later = await _calls(workspace, ["echo one > notes.txt", second])
    failed = [why for why in (_undo(later), _undo(first)) if why]
    assert failed == [], failed
    assert differences(before, snapshot(workspace)) == []


async def test_undo_redo_undo_again(workspace: Path) -> None:
    before = snapshot(workspace)
    (first,) = await _calls(workspace, ["echo one > notes.txt"])
    assert _undo(first) == ""
    assert _undo(_undo_id(first)) == ""  # the redo: call ``first`` in force again
    assert (workspace / "notes.txt").read_text() == "one\n"
    failed = _undo(first)  # the user changes their mind once more
    assert failed == "", failed
    assert differences(before, snapshot(workspace)) == []


async def test_control_a_single_call_undone_at_once(workspace: Path) -> None:
    before = snapshot(workspace)
    (first,) = await _calls(workspace, ["echo one > notes.txt && echo two >> hello.txt"])
    assert _undo(first) == ""
    assert differences(before, snapshot(workspace)) == []


async def test_control_a_job_undone(workspace: Path) -> None:
    before = snapshot(workspace)
    async with shell(workspace, Person(False)) as client:
        looks = [await run(client, "echo a > j.txt && sleep 4 && echo b >> j.txt", cwd=str(workspace),
                           yieldAfterSeconds=2)]  # fmt: skip
        with anyio.fail_after(60):
            while looks[-1]["status"] == "running":
                looks.append(await run(client, "", jobId=looks[0]["jobId"], yieldAfterSeconds=5))
    assert (workspace / "j.txt").read_text() == "a\nb\n", looks
    assert _undo(str(looks[0]["auditId"])) == ""
    assert differences(before, snapshot(workspace)) == []
