"""Red team 103 probe (HELD if it passes): everyday git gc flows (after 384f6ec's objects as the call leaves them)
are not asked: gc --prune=now, repack -ad, gc twice in one line, pack-refs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from support.boxed import Person, run, shell

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


@pytest.mark.parametrize(
    "line",
    ["git gc --prune=now -q", "git repack -adq", "git gc -q && git gc --prune=now -q", "git pack-refs --all"],
)
async def test_everyday_gc_is_not_asked(workspace: Path, line: str) -> None:
    root = workspace / "p"
    _repo(root)
    subprocess.run([*GIT, "gc", "-q"], cwd=root, check=True, timeout=60)  # (one pack already, as most repositories)
    (root / "b.txt").write_text("b\n")
    subprocess.run([*GIT, "add", "b.txt"], cwd=root, check=True, timeout=60)
    subprocess.run([*GIT, "commit", "-qm", "v3"], cwd=root, check=True, timeout=60)
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, line, cwd=str(root))
    assert not person.questions, (line, person.questions, out.get("transaction"))
    shown = subprocess.run(["git", "show", "HEAD~2:a.txt"], cwd=root, capture_output=True, timeout=10)
    assert shown.stdout == OLD, shown.stderr
