"""Red team 109 F2: ``mcp-guard undo`` of a file_write with ``createDirs`` exits 0 ("every path back exactly")
while the directories the write made stay, and the directory it wrote in keeps the time the write gave it.

file_write's call record (``files.write_records._record``) names the file only: neither the directories
``createDirs`` made (``Writer`` makes them holding the tree lock) nor the times of the directories it changed. The
undo removes the file and says success; ``new/deeper/`` stay behind (empty) and the project's top keeps a new
modification time. Control: the same write made by a shell_exec command (``mkdir -p`` and a redirect) is undone
exactly (no directory left, every directory's time as before).

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


async def test_control_a_commands_new_file_in_new_dirs_is_undone_exactly(workspace: Path) -> None:
    before = snapshot(workspace)
    async with shell(workspace, Person(False)) as client:
        result: dict[str, Any] = await run(
            client, "mkdir -p new/deeper && printf 'x\\n' > new/deeper/notes.md", cwd=str(workspace)
        )
    assert result["transaction"] == "applied", result
    undone = mcp_guard("undo", result["auditId"])
    assert undone.returncode == 0, undone.stderr
    assert differences(before, snapshot(workspace), all_mtimes=True) == []


async def test_file_write_with_create_dirs_undone_leaves_its_directories(workspace: Path) -> None:
    before = snapshot(workspace)
    async with serve(FW, workspace) as client:
        written = await client.call_tool(
            "file_write", {"path": str(workspace / "new/deeper/notes.md"), "content": "x\n", "createDirs": True}
        )
    assert not written.is_error, written
    audit_id = str(dict(written.structured_content or {})["auditId"])
    undone = mcp_guard("undo", audit_id)
    assert undone.returncode == 0, undone.stderr  # "undone (every path back exactly)"
    assert not (workspace / "new/deeper/notes.md").exists()
    left = differences(before, snapshot(workspace), all_mtimes=True)
    assert left == [], f"undo said every path is back exactly; the tree differs: {left}"


@pytest.mark.parametrize("how", ["overwrite", "new file in an existing directory"])
async def test_file_write_undone_puts_its_directorys_time_back(workspace: Path, how: str) -> None:
    (workspace / "docs").mkdir()
    if how == "overwrite":
        (workspace / "docs/notes.md").write_text("the user's\n")
    before = snapshot(workspace)
    async with serve(FW, workspace) as client:
        written = await client.call_tool(
            "file_write", {"path": str(workspace / "docs/notes.md"), "content": "x\n", "overwrite": True}
        )
    assert not written.is_error, written
    undone = mcp_guard("undo", str(dict(written.structured_content or {})["auditId"]))
    assert undone.returncode == 0, undone.stderr
    assert differences(before, snapshot(workspace), all_mtimes=True) == []


async def test_a_directory_create_dirs_made_and_then_written_in_is_not_taken_away(workspace: Path) -> None:
    async with serve(FW, workspace) as client:
        written = await client.call_tool(
            "file_write", {"path": str(workspace / "new/notes.md"), "content": "x\n", "createDirs": True}
        )
    assert not written.is_error, written
    (workspace / "new/mine.txt").write_text("the user's own, written after\n")
    undone = mcp_guard("undo", str(dict(written.structured_content or {})["auditId"]))
    assert undone.returncode == 2 and "UNDO_CONFLICT" in undone.stdout + undone.stderr, undone
    assert (workspace / "new/mine.txt").read_text() == "the user's own, written after\n"
