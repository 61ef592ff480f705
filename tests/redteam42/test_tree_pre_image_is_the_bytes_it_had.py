"""A pre-image is the bytes the path had, whatever hard links point at the same inode afterwards (issue 42, item 8),
for a whole tree too: ``rm -r sub`` where ``sub/h3`` is another name of ``h1`` keeps ``sub`` in the history; a later
edit through ``h1`` must not change what undo brings back. Undo is still exact where nothing changed: ``sub/h3`` is
a name of ``h1`` again (docs/shell_exec.md "Undo": names of one file made one file again); and a redo is exact."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.boxed import run, shell, snap, undo

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


def _project(workspace: Path) -> None:
    (workspace / "h1").write_text("linked\n")
    os.link(workspace / "h1", workspace / "sub" / "h3")
    (workspace / "sub" / "more.txt").write_text("more\n")


async def test_an_edit_through_another_name_after_the_call_does_not_change_the_kept_tree(workspace: Path) -> None:
    _project(workspace)
    async with shell(workspace) as client:
        out = await run(client, "rm -r sub")
    assert out["transaction"] == "applied" and not (workspace / "sub").exists(), out
    with (workspace / "h1").open("a") as fh:
        fh.write("edited after the call\n")  # the person, later: h1 was one file with sub/h3
    undo_id, why = undo(out["auditId"], force=True)
    assert undo_id, why
    assert (workspace / "sub" / "h3").read_text() == "linked\n", "the pre-image changed with a later edit of h1"
    assert (workspace / "h1").read_text() == "linked\nedited after the call\n"


async def test_undo_makes_the_names_one_file_again_and_redo_is_exact(workspace: Path) -> None:
    _project(workspace)
    before = snap(workspace)
    async with shell(workspace) as client:
        out = await run(client, "rm -r sub")
    after = snap(workspace)
    undo_id, why = undo(out["auditId"])
    assert undo_id, why
    assert snap(workspace) == before
    a, b = os.stat(workspace / "h1"), os.stat(workspace / "sub" / "h3")
    assert (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)
    redo_id, why = undo(undo_id)
    assert redo_id, why
    assert snap(workspace) == after
    again, why = undo(redo_id)
    assert again, why
    assert snap(workspace) == before
