"""Red team 103 probe (HELD if it passes): everyday git gc flows (after 384f6ec's objects as the call leaves them)
are not asked: gc --prune=now, repack -ad, gc twice in one line, pack-refs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from support.boxed import Person, run, shell
from support.old_versions import GIT, OLD, two_versions

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

HERE = Path(__file__).resolve().parent


@pytest.mark.parametrize(
    "line",
    ["git gc --prune=now -q", "git repack -adq", "git gc -q && git gc --prune=now -q", "git pack-refs --all"],
)
async def test_everyday_gc_is_not_asked(workspace: Path, line: str) -> None:
    root = workspace / "p"
    two_versions(root)
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
