"""Red team 109 F3: rolling back a session newest first (what docs/agent-cli.md tells a host to do) stops at
``UNDO_CONFLICT`` once a file_write's undo has put a file back: the earlier call that changed the same file can no
longer be undone without ``--force``, though nobody else touched the file.

file_write keeps the previous content by copying it into the history; its undo swaps that copy in, so the file at
the name is a new inode (new ctime) with the old bytes, and the undo exits 0 ("every path back exactly"). The
earlier call's record names the file it landed (device, inode, time, size: ``revert.as_left``) and the undo of a
file_write notes no "put back since" for it (``revert.put_back_since``, which an undo of a shell call does note),
so the earlier call's undo takes the file for one someone changed after it: exit 2, UNDO_CONFLICT, nothing undone.
The user is left with the model's first edit in place, and the only way on is ``--force``, which would also override
any real later edit of theirs. Control: the same two edits made by two shell_exec calls undo newest first, exactly.

A person declines every question (none is asked)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from support import serve
from support.boxed import Person, run, shell
from support.fidelity import differences, snapshot
from support.redteam import mcp_guard

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

FW = "mcp-server-file-write"


async def _shell(workspace: Path, command: str) -> str:
    async with shell(workspace, Person(False)) as client:
        result: dict[str, Any] = await run(client, command, cwd=str(workspace))
    assert result["transaction"] == "applied", result
    return str(result["auditId"])


async def _write(workspace: Path, content: str) -> str:
    async with serve(FW, workspace) as client:
        written = await client.call_tool(
            "file_write", {"path": str(workspace / "notes.txt"), "content": content, "overwrite": True}
        )
    assert not written.is_error, written
    return str(dict(written.structured_content or {})["auditId"])


def _rolled_back(workspace: Path, newest_first: list[str]) -> list[str]:
    found = []
    for audit_id in newest_first:
        undone = mcp_guard("undo", audit_id)
        if undone.returncode != 0:
            found.append(f"undo {audit_id}: exit {undone.returncode}: {undone.stderr.strip()[-300:]}")
    return found


async def test_control_two_commands_roll_back_newest_first(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("the user's notes\n")
    before = snapshot(workspace)
    first = await _shell(workspace, "echo model-one >> notes.txt")
    second = await _shell(workspace, "echo model-two > notes.txt")
    assert _rolled_back(workspace, [second, first]) == []
    assert differences(before, snapshot(workspace), all_mtimes=True) == []


async def test_a_command_then_a_file_write_roll_back_newest_first(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("the user's notes\n")
    first = await _shell(workspace, "echo model-one >> notes.txt")
    second = await _write(workspace, "model-two\n")
    failed = _rolled_back(workspace, [second, first])
    assert failed == [], failed
    assert (workspace / "notes.txt").read_text() == "the user's notes\n"


async def test_two_file_writes_roll_back_newest_first(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("the user's notes\n")
    first = await _write(workspace, "model-one\n")
    second = await _write(workspace, "model-two\n")
    failed = _rolled_back(workspace, [second, first])
    assert failed == [], failed
    assert (workspace / "notes.txt").read_text() == "the user's notes\n"
