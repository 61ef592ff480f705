"""file_write keeps the file it replaces whole where it has no other name — a new name of that very file in the
history — so that its undo puts the same file back (red team 110 F3: an earlier call's record names that file); a
file with other names is kept as a copy (its bytes could change through them) and its undo makes it one file with
the names that still hold those bytes (red team 109 F1)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from support import serve
from support.redteam import mcp_guard

pytestmark = pytest.mark.anyio

FW = "mcp-server-file-write"


async def _overwrite(root: Path, name: str) -> str:
    async with serve(FW, root) as client:
        written = await client.call_tool(
            "file_write", {"path": str(root / name), "content": "new\n", "overwrite": True}
        )
    assert not written.is_error, written
    return str(dict(written.structured_content or {})["auditId"])


async def test_a_file_with_one_name_is_kept_whole_and_its_undo_puts_the_same_file_back(workspace: Path) -> None:
    (workspace / "a.txt").write_text("the user's\n")
    before = (workspace / "a.txt").stat()
    audit_id = await _overwrite(workspace, "a.txt")
    undone = mcp_guard("undo", audit_id)
    assert undone.returncode == 0, undone.stderr
    after = (workspace / "a.txt").stat()
    assert (after.st_dev, after.st_ino, after.st_mtime_ns) == (before.st_dev, before.st_ino, before.st_mtime_ns)
    assert (workspace / "a.txt").read_text() == "the user's\n"


async def test_a_file_with_other_names_comes_back_one_file_with_them(workspace: Path) -> None:
    (workspace / "a.txt").write_text("the user's\n")
    os.link(workspace / "a.txt", workspace / "h.txt")
    audit_id = await _overwrite(workspace, "a.txt")
    assert (workspace / "h.txt").read_text() == "the user's\n"
    undone = mcp_guard("undo", audit_id)
    assert undone.returncode == 0, undone.stderr
    assert (workspace / "a.txt").stat().st_ino == (workspace / "h.txt").stat().st_ino
    assert (workspace / "a.txt").read_text() == "the user's\n"
