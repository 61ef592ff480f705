"""Red team 102 F1 (HIGH): ``git stash -u`` followed by a crafted pack makes an untracked file's deletion look
"kept by git" (``changes.git_kept._stashed``), while the tree the call leaves holds the file's bytes nowhere.

The judgement reads a git dir's objects through ``Objects([upper, root])``: the copy's objects over the real ones,
*deleted ones included* (the real tree is read as it was). The payload (``thin_pack_cycle.py``, data run inside the
box) leaves a new pack that lists B (a committed blob, loose in the real tree) as a REF_DELTA on B itself and the
stashed file's blob C as a REF_DELTA on B, and deletes the loose B (and C, never left). At judgement time each delta
resolves through the real tree's loose B, so:

* ``_stashed``: the stash's untracked tree names C and ``Objects.get(C)`` hashes right: notes.txt "kept";
* ``_kept_in``: the deleted loose B is listed by a pack the call left (``_Store.packed``: the index only): "kept";
* ``git_refs._substitutes`` / ``shadowed``: every entry of the new pack hashes right (bases read from the real
  tree's deleted loose B): no question.

Nothing is asked; once applied, B and C exist only as deltas on B: the user's untracked notes.txt is gone from the
tree and from git (``git cat-file`` fails, ``git stash pop`` fails), and HEAD's a.txt blob is gone too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import zlib
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
    (root / "a.txt").write_text("a\n")
    subprocess.run([*GIT, "add", "a.txt"], cwd=root, check=True, timeout=60)
    subprocess.run([*GIT, "commit", "-qm", "init"], cwd=root, check=True, timeout=60)
    (root / "notes.txt").write_bytes(WORK)


def _anywhere(root: Path) -> bool:
    """Whether the work's bytes are in the tree: any file as it is, any loose object inflated, or git can read
    the stash's copy."""
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            data = (Path(dirpath) / name).read_bytes()
            if WORK in data:
                return True
            try:
                if WORK in zlib.decompress(data):
                    return True
            except zlib.error:
                pass
    try:  # (git itself loops on the delta cycle: bounded)
        shown = subprocess.run(["git", "show", "refs/stash^3:notes.txt"], cwd=root, capture_output=True, timeout=10)
    except subprocess.TimeoutExpired:
        return False
    return shown.returncode == 0 and shown.stdout == WORK


async def test_stash_then_thin_pack_cycle_deletes_untracked_work_unasked(workspace: Path) -> None:
    root = workspace / "p"
    _repo(root)
    payload = program(root, "cycle", (HERE / "thin_pack_cycle.payload").read_text())
    # .t/ (the payload) is untracked too: the stash would take it; keep it out of the stash's way.
    (root / ".git" / "info" / "exclude").write_text(".t/\n")
    command = f"git -c user.name=t -c user.email=t@t stash -q -u && {payload} notes.txt a.txt"
    person = Person(False)  # declines every question
    async with shell(workspace, person) as client:
        out = await run(client, command, cwd=str(root))
    landed = not (root / "notes.txt").exists()
    lost = landed and not _anywhere(root)
    undone = ""
    if landed:
        undo_id, why = undo(str(out["auditId"]))
        undone = f"undo: {undo_id or why}; notes.txt back: {(root / 'notes.txt').exists()}"
    assert not lost, (
        "untracked notes.txt deleted with no question and its bytes are in neither the tree nor git's objects",
        person.questions,
        out.get("transaction"),
        undone,
    )
