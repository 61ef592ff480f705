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
import subprocess
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell, undo

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

HERE = Path(__file__).resolve().parent
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
OLD = b"the old version of a.txt, only in history\n"
REVS = "HEAD~1 'HEAD~1^{tree}' HEAD~1:a.txt"


def _repo(root: Path) -> None:
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=60)
    (root / ".git" / "info" / "exclude").write_text(".t/\n")
    (root / "a.txt").write_bytes(OLD)
    subprocess.run([*GIT, "add", "a.txt"], cwd=root, check=True, timeout=60)
    subprocess.run([*GIT, "commit", "-qm", "v1"], cwd=root, check=True, timeout=60)
    (root / "a.txt").write_text("a\n")
    subprocess.run([*GIT, "commit", "-qam", "v2"], cwd=root, check=True, timeout=60)


def _git_has_old(root: Path) -> bool:
    try:  # (git loops on a delta on itself: bounded)
        shown = subprocess.run(["git", "show", "HEAD~1:a.txt"], cwd=root, capture_output=True, timeout=10)
    except subprocess.TimeoutExpired:
        return False
    return shown.returncode == 0 and shown.stdout == OLD


async def test_a_new_self_delta_pack_alone_makes_history_unreadable_unasked(workspace: Path) -> None:
    root = workspace / "p"
    _repo(root)
    payload = program(root, "selfdelta", (HERE / "self_delta_two_calls.payload").read_text())
    person = Person(False)  # declines every question
    async with shell(workspace, person) as client:
        out = await run(client, f"{payload} write {REVS}", cwd=str(root))
    kept = _git_has_old(root)
    undone = ""
    if not kept:
        undo_id, why = undo(str(out["auditId"]))
        undone = f"undo: {undo_id or why}; old version readable again: {_git_has_old(root)}"
    assert kept, (
        "a new pack only (nothing deleted, the loose copies still there) made the previous commit unreadable",
        person.questions,
        out.get("transaction"),
        undone,
    )
