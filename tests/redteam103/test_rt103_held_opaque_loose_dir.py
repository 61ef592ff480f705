"""Red team 103 probe (HELD if it passes): a loose object's whole directory removed and made again (an opaque
directory in the copy) is still counted as a loss (asked), as ``rm -rf .git/objects/ab`` is."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell, undo
from support.old_versions import git_has_old, two_versions

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

HERE = Path(__file__).resolve().parent


async def test_a_loose_directory_removed_and_made_again_is_asked(workspace: Path) -> None:
    root = workspace / "p"
    two_versions(root)
    payload = program(root, "opaque", (HERE / "opaque_loose_dir.payload").read_text())
    person = Person(False)  # declines every question
    async with shell(workspace, person) as client:
        out = await run(client, f"{payload} HEAD~1:a.txt", cwd=str(root))
    kept = git_has_old(root)
    undone = ""
    if not kept:
        undo_id, why = undo(str(out["auditId"]))
        undone = f"undo: {undo_id or why}; old version readable again: {git_has_old(root)}"
    assert person.questions, ("nothing asked", out)
    assert kept, ("an old version lost with no question", person.questions, out.get("transaction"), undone)
