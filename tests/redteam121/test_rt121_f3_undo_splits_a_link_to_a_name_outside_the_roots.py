"""Red team 121 F3: a project file with another name outside the allowed directories (``ln proj/notes.txt
~/shared/notes.txt``: a file kept in two places on purpose) is rewritten by a command; `mcp-guard undo` exits 0
("every path back exactly") but the file it puts back is a copy: notes.txt is no longer a name of the user's file
(``st_nlink`` 2 -> 1, another inode), and stays so.

The apply writes only the name the command used (documented: nothing outside is written through a link), and keeps
the pre-image as a *copy* (the file has other names). The user's inode is still whole at the outside name, with the
bytes and mode of the pre-image, but the undo lays the copy down as a new file: the hard-link group the user made is
split for good, silently. From then on an edit of notes.txt no longer reaches ~/shared/notes.txt (and the reverse).

LOW: no content is lost at the undo; the claim "undo is exact" (names of one file made one file again) is not met
and not reported. A command's ``mv`` of the file (kept whole) is undone with the link group intact (control)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from support.boxed import Person, run, shell
from support.hooked import git
from support.redteam import mcp_guard

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

CALLS: dict[str, str] = json.loads((Path(__file__).parent / "outside_link_calls.json").read_text())


async def _undone_after(workspace: Path, command: str) -> tuple[os.stat_result, os.stat_result]:
    outside = workspace.parent / "outside" / "notes.txt"
    (workspace / "notes.txt").write_text("user\n")
    os.link(workspace / "notes.txt", outside)
    git(workspace, "init", "-q", "-b", "main")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "--no-verify", "-m", "init")
    person = Person(False)
    async with shell(workspace, person) as sx:
        out = await run(sx, command, cwd=str(workspace))
    assert out["transaction"] == "applied", out
    undone = mcp_guard("undo", str(out["auditId"]))
    assert undone.returncode == 0, undone.stderr  # "every path back exactly"
    assert (workspace / "notes.txt").read_text() == "user\n"
    return os.lstat(workspace / "notes.txt"), os.lstat(outside)


async def test_control_a_rename_undone_keeps_the_link(workspace: Path) -> None:
    here, there = await _undone_after(workspace, CALLS["rename"])
    assert (here.st_dev, here.st_ino, here.st_nlink) == (there.st_dev, there.st_ino, 2)


# Known and left (issue 42's closing note): the apply keeps a file with other names as a copy, and an undo cannot reach
# a name outside the allowed directories to link it back; keeping a link to the old inode beside the copy (checked by
# its ctime at the undo) would. Strict: this fails the suite the day it passes.
@pytest.mark.xfail(strict=True, reason="a link group with a name outside the roots is split by an undo (known)")
@pytest.mark.parametrize("key", ["rewrite", "append"])
async def test_a_rewrite_undone_splits_the_link(workspace: Path, key: str) -> None:
    here, there = await _undone_after(workspace, CALLS[key])
    assert (here.st_dev, here.st_ino, here.st_nlink) == (there.st_dev, there.st_ino, 2), (
        f"undo exited 0 but notes.txt is another file than the user's (inode {here.st_ino}, {here.st_nlink} name) "
        f"while ~/shared/notes.txt still is it (inode {there.st_ino}, same bytes)"
    )
