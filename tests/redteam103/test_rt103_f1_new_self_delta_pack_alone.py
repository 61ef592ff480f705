"""Red team 103 F1 (HIGH): red team 102 F2's self-delta pack destroys history unasked without deleting anything.

384f6ec makes ``Trees.objects`` read the store as the call leaves it, so the loose copies the call *deletes* are no
longer a REF_DELTA's base. But the call need not
delete them: git looks an object up in its packs before its loose objects, a REF_DELTA's base included, so an entry
for X that is a REF_DELTA on X sends git back to that very entry (``git show`` loops: a hang; ``fsck`` and ``gc``
too) while the loose X is still on disk. ``git_objects.Objects._unpacked`` looks the base up loose first
(``self._loose(base_id) or self._packed(...)``), so ``shadowed`` (``git_refs._substitutes``) reads every entry of the
new pack well: no question.

The payload (``self_delta_two_calls.payload``, data run only inside the box) with ``write`` writes the pack only.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell, undo
from support.old_versions import git_has_old, two_versions

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

HERE = Path(__file__).resolve().parent
REVS = "HEAD~1 'HEAD~1^{tree}' HEAD~1:a.txt"


async def test_a_new_self_delta_pack_alone_makes_history_unreadable_unasked(workspace: Path) -> None:
    root = workspace / "p"
    two_versions(root)
    payload = program(root, "selfdelta", (HERE / "self_delta_two_calls.payload").read_text())
    person = Person(False)  # declines every question
    async with shell(workspace, person) as client:
        out = await run(client, f"{payload} write {REVS}", cwd=str(root))
    kept = git_has_old(root)
    undone = ""
    if not kept:
        undo_id, why = undo(str(out["auditId"]))
        undone = f"undo: {undo_id or why}; old version readable again: {git_has_old(root)}"
    assert kept, (
        "a new pack only (nothing deleted, the loose copies still there) made the previous commit unreadable",
        person.questions,
        out.get("transaction"),
        undone,
    )
