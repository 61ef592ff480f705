"""Red team 102 F2 (HIGH, not new in issue 45): a new pack whose entries are REF_DELTAs on themselves, with the loose
objects they stand for deleted, destroys committed history with no question.

``changes.git_kept._kept_in`` counts a deleted loose object as kept when a pack the call left *lists* it
(``_Store.packed``: the index only). The new pack's entries are checked by ``git_refs._substitutes`` /
``git_objects.shadowed``, which read every entry through ``Objects([upper, root])`` — and a REF_DELTA's base is
looked up loose first, in the real tree too, where the loose object the call deleted still is. So the entry for X
(a delta on X) "hashes right" at judgement time; once applied, X exists only as a delta on itself.

The payload (``self_delta_pack.py``, data run inside the box) does it to the previous commit, its tree and its
a.txt blob: the older version of a.txt (only in history) is gone, unasked.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell, undo
from support.old_versions import git_has_old, two_versions

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

HERE = Path(__file__).resolve().parent


async def test_self_delta_pack_destroys_an_old_version_unasked(workspace: Path) -> None:
    root = workspace / "p"
    two_versions(root)
    assert git_has_old(root)
    payload = program(root, "selfdelta", (HERE / "self_delta_pack.payload").read_text())
    person = Person(False)  # declines every question
    async with shell(workspace, person) as client:
        out = await run(client, f"{payload} HEAD~1 'HEAD~1^{{tree}}' HEAD~1:a.txt", cwd=str(root))
    kept = git_has_old(root)
    undone = ""
    if not kept:
        undo_id, why = undo(str(out["auditId"]))
        undone = f"undo: {undo_id or why}; old version readable again: {git_has_old(root)}"
    assert kept, (
        "the previous commit, its tree and its blob made unreadable with no question",
        person.questions,
        out.get("transaction"),
        undone,
    )
