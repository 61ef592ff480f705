"""Red team 109 F1: ``mcp-guard undo`` of a file_write that replaced a file with several names exits 0 ("every
path back exactly") while the names it put back are no longer one file.

file_write lands by renaming a new file over the name (``a``), so ``a`` and its other name ``h`` become two files
(as natively). Its call record (``files.write_records._record``) keeps one change for ``a`` with the pre-image
(copied, since the file had other names) but no ``stays``/``group`` naming ``h``: the undo swaps the copy in at
``a`` and says success, and ``a`` and ``h`` stay two files with the same bytes. A later edit through one name no
longer reaches the other (a config shared by two trees, a ``cp -al`` snapshot's working copy): the user was told the
tree is back exactly. Control: the same replacement made by a shell_exec command (a new file renamed over ``a``) is
undone with the two names one file again (``changes.revert``: ``stays``).

A person declines every question (none is asked)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from support import serve
from support.boxed import Person, run, shell
from support.redteam import mcp_guard

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

FW = "mcp-server-file-write"


def _linked(workspace: Path) -> None:
    (workspace / "a.txt").write_text("the user's shared notes\n")
    os.link(workspace / "a.txt", workspace / "h.txt")


def _one_file(workspace: Path) -> bool:
    a, h = os.lstat(workspace / "a.txt"), os.lstat(workspace / "h.txt")
    return (a.st_dev, a.st_ino) == (h.st_dev, h.st_ino)


async def test_control_a_commands_rename_over_a_linked_file_is_undone_as_one_file(workspace: Path) -> None:
    _linked(workspace)
    async with shell(workspace, Person(False)) as client:
        result: dict[str, Any] = await run(client, "printf 'model\\n' > t.txt && mv -f t.txt a.txt", cwd=str(workspace))
    assert result["transaction"] == "applied" and not _one_file(workspace), result
    undone = mcp_guard("undo", result["auditId"])
    assert undone.returncode == 0, undone.stderr
    assert (workspace / "a.txt").read_text() == "the user's shared notes\n"
    assert _one_file(workspace), "a.txt and h.txt are two files after the undo"


async def test_file_write_over_a_linked_file_undone_leaves_two_files(workspace: Path) -> None:
    _linked(workspace)
    async with serve(FW, workspace) as client:
        written = await client.call_tool(
            "file_write", {"path": str(workspace / "a.txt"), "content": "model\n", "overwrite": True}
        )
    assert not written.is_error, written
    audit_id = str(dict(written.structured_content or {})["auditId"])
    assert not _one_file(workspace)
    undone = mcp_guard("undo", audit_id)
    assert undone.returncode == 0, undone.stderr  # "undone (every path back exactly)"
    assert (workspace / "a.txt").read_text() == "the user's shared notes\n"
    assert _one_file(workspace), "undo said every path is back exactly, but a.txt and h.txt are now two files"
