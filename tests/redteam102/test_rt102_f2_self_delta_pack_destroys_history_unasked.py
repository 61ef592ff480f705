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
import subprocess
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell, undo

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

HERE = Path(__file__).resolve().parent
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
OLD = b"the old version of a.txt, only in history\n"


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


async def test_self_delta_pack_destroys_an_old_version_unasked(workspace: Path) -> None:
    root = workspace / "p"
    _repo(root)
    assert _git_has_old(root)
    payload = program(root, "selfdelta", (HERE / "self_delta_pack.payload").read_text())
    person = Person(False)  # declines every question
    async with shell(workspace, person) as client:
        out = await run(client, f"{payload} HEAD~1 'HEAD~1^{{tree}}' HEAD~1:a.txt", cwd=str(root))
    kept = _git_has_old(root)
    undone = ""
    if not kept:
        undo_id, why = undo(str(out["auditId"]))
        undone = f"undo: {undo_id or why}; old version readable again: {_git_has_old(root)}"
    assert kept, (
        "the previous commit, its tree and its blob made unreadable with no question",
        person.questions,
        out.get("transaction"),
        undone,
    )
