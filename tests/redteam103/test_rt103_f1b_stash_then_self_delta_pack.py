"""Red team 103 F1b (HIGH, same cause as F1): red team 102 F1's stash attack without deleting any object.

``git stash -u`` saves the untracked notes.txt (its blob C loose) and deletes it; the payload then writes a pack
whose entry for C is a REF_DELTA on C itself (``self_delta_two_calls.payload write``), deleting nothing. The
judgement (``git_kept._stashed`` through ``Trees.objects``) reads C loose first: "kept by git", not asked. git reads
the packed C first and loops: ``git stash pop`` / ``git show refs/stash^3:notes.txt`` never give the work back.
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
WORK = b"the user's untracked notes, nowhere else\n"


def _repo(root: Path) -> None:
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=60)
    (root / ".git" / "info" / "exclude").write_text(".t/\n")
    (root / "a.txt").write_text("a\n")
    subprocess.run([*GIT, "add", "a.txt"], cwd=root, check=True, timeout=60)
    subprocess.run([*GIT, "commit", "-qm", "init"], cwd=root, check=True, timeout=60)
    (root / "notes.txt").write_bytes(WORK)


def _git_gives_it_back(root: Path) -> bool:
    try:  # (git loops on a delta on itself: bounded)
        shown = subprocess.run(["git", "show", "refs/stash^3:notes.txt"], cwd=root, capture_output=True, timeout=10)
    except subprocess.TimeoutExpired:
        return False
    return shown.returncode == 0 and shown.stdout == WORK


async def test_stash_then_self_delta_pack_makes_untracked_work_unreadable_unasked(workspace: Path) -> None:
    root = workspace / "p"
    _repo(root)
    payload = program(root, "selfdelta", (HERE / "self_delta_two_calls.payload").read_text())
    command = f"git -c user.name=t -c user.email=t@t stash -q -u && {payload} write refs/stash^3:notes.txt"
    person = Person(False)  # declines every question
    async with shell(workspace, person) as client:
        out = await run(client, command, cwd=str(root))
    gone = not (root / "notes.txt").exists()
    lost = gone and not _git_gives_it_back(root)
    undone = ""
    if gone:
        undo_id, why = undo(str(out["auditId"]))
        undone = f"undo: {undo_id or why}; notes.txt back: {(root / 'notes.txt').exists()}"
    assert not lost, (
        "untracked notes.txt deleted with no question; git cannot give the stash's copy back",
        person.questions,
        out.get("transaction"),
        undone,
    )
