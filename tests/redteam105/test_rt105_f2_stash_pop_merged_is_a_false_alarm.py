"""Red team 105 F2 (false alarm on an everyday flow): ``git stash pop`` of a stash made before a commit that touched
the same file elsewhere. Git merges the stash in (both changes in the file, no conflict) and drops it: nothing is
lost, yet ``git_kept._applied_here`` wants every file the stash changed to hold the stash's blob exactly, so the pop
is asked ("It leaves commits named by .git/refs/stash with no name") with several stashes (a rewrite), and as a
deletion with one. A person who declines keeps the stash, but the everyday flow is blocked.

A person declines every question; a case fails when the pop was asked (or did not apply)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from support.boxed import Person, run, shell
from support.hooked import git

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

LINES = "".join(f"line {n}\n" for n in range(1, 11))


def _project(root: Path, stashes: int, merged: bool) -> None:
    git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text(LINES)
    (root / "b.txt").write_text("b\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "--no-verify", "-m", "init")
    if stashes > 1:
        (root / "b.txt").write_text("older stash\n")
        git(root, "stash", "-q")
    (root / "a.txt").write_text(LINES.replace("line 1\n", "line 1 (my work)\n"))
    git(root, "stash", "-q")
    if merged:  # (a commit on the same file, another line: the pop merges)
        (root / "a.txt").write_text(LINES.replace("line 10\n", "line 10 (upstream)\n"))
        git(root, "commit", "-q", "--no-verify", "-am", "upstream")


@pytest.mark.parametrize("merged", [True, False])
@pytest.mark.parametrize("stashes", [1, 2])
async def test_stash_pop_is_not_asked(workspace: Path, stashes: int, merged: bool) -> None:
    _project(workspace, stashes, merged)
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, "git stash pop -q", cwd=str(workspace))
    text = (workspace / "a.txt").read_text()
    listed = subprocess.run(["git", "stash", "list"], cwd=workspace, capture_output=True, text=True, timeout=30,
                            check=False).stdout.splitlines()  # fmt: skip
    assert not person.questions, (stashes, merged, person.questions)
    assert "my work" in text and len(listed) == stashes - 1, (out.get("transaction"), text, listed)


@pytest.mark.parametrize("stashes", [1, 2])
async def test_control_a_stash_dropped_after_a_commit_on_the_same_file_is_still_asked(
    workspace: Path, stashes: int
) -> None:
    _project(workspace, stashes, merged=True)
    person = Person(False)
    async with shell(workspace, person) as client:
        await run(client, "git stash drop -q", cwd=str(workspace))
    listed = subprocess.run(["git", "stash", "list"], cwd=workspace, capture_output=True, text=True, timeout=30,
                            check=False).stdout.splitlines()  # fmt: skip
    assert person.questions, stashes
    assert len(listed) == stashes, listed  # (declined: the stash is still there)
