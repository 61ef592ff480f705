"""Fidelity: renaming a project directory that holds a name of a file with several names leaves those names one
file, as ``mv`` does natively (docs/shell_exec.md "What lands": hard links), both when the other name lies in
another directory (``sp/x1`` and ``d/x2``) and when both names are inside the moved directory (``both/f1`` and
``both/f2``); undo and redo are exact. The box moves such a directory as a copy: its files once landed as files of
their own."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.boxed import run, shell, snap, undo

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

CASES = {
    # command: the two names that must stay one file afterwards
    "mv sp sp2": ("sp2/x1", "d/x2"),
    "mv sp d/moved": ("d/moved/x1", "d/x2"),
    "mv d dd": ("sp/x1", "dd/x2"),
    "mv both both2": ("both2/f1", "both2/f2"),
}


@pytest.mark.parametrize("command", sorted(CASES))
async def test_dir_rename_keeps_hard_links(workspace: Path, command: str) -> None:
    for d in ("sp", "d", "both"):
        (workspace / d).mkdir()
    (workspace / "sp" / "x1").write_text("span\n")
    os.link(workspace / "sp" / "x1", workspace / "d" / "x2")  # two names in two directories
    (workspace / "both" / "f1").write_text("both\n")
    os.link(workspace / "both" / "f1", workspace / "both" / "f2")  # two names in one directory
    before = snap(workspace)
    async with shell(workspace) as client:
        out = await run(client, command)
    assert out["transaction"] == "applied", out
    first, second = CASES[command]
    a, b = os.stat(workspace / first), os.stat(workspace / second)
    assert (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino), (
        f"{first} and {second} are no longer one file after {command!r} (natively they are); "
        f"changes: {out['changes']['paths']}"
    )
    after = snap(workspace)
    undo_id, why = undo(out["auditId"])
    assert undo_id, why
    assert snap(workspace) == before
    redo_id, why = undo(undo_id)
    assert redo_id, why
    assert snap(workspace) == after
