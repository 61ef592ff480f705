"""Red team 103 probe (HELD if it passes): a loose object's whole directory removed and made again (an opaque
directory in the copy) is still counted as a loss (asked), as ``rm -rf .git/objects/ab`` is."""

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


async def test_a_loose_directory_removed_and_made_again_is_asked(workspace: Path) -> None:
    root = workspace / "p"
    _repo(root)
    payload = program(root, "opaque", (HERE / "opaque_loose_dir.payload").read_text())
    person = Person(False)  # declines every question
    async with shell(workspace, person) as client:
        out = await run(client, f"{payload} HEAD~1:a.txt", cwd=str(root))
    kept = _git_has_old(root)
    undone = ""
    if not kept:
        undo_id, why = undo(str(out["auditId"]))
        undone = f"undo: {undo_id or why}; old version readable again: {_git_has_old(root)}"
    assert person.questions, ("nothing asked", out)
    assert kept, ("an old version lost with no question", person.questions, out.get("transaction"), undone)
