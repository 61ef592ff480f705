"""Red team 104 F1: work git keeps only under a name (a stash entry, a tag, a reflog entry) that the call takes away
by *rewriting* a file of the git dir (refs/stash moved to the older entry, logs/refs/stash with a line fewer, a
packed-refs without the tag, reflogs expired) is not asked, while the same loss by *deleting* the file is
(``git stash drop`` of the last stash, ``git tag -d`` of a loose tag, ``git branch -D``).

The command lines travel as data (git_names_lost.json). A person declines every question; a case fails when the
call applied with no question and the commit that held the work is named by no ref and no reflog any more."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from support.boxed import Person, run, shell
from support.hooked import git, git_out, one_commit, stashed

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

LINES: dict[str, str] = json.loads((Path(__file__).resolve().parent / "git_names_lost.json").read_text())


def _setup(case: str, root: Path) -> str:
    """The project for ``case``; returns the commit whose work the line takes the last name of."""
    one_commit(root)
    if case == "control_stash_drop_last":
        return stashed(root, "only in the stash\n")
    if case == "stash_drop_top_of_two":
        stashed(root, "first stash\n")
        return stashed(root, "second stash: only here\n")
    if case == "stash_drop_older_of_two":
        first = stashed(root, "first stash: only here\n")
        stashed(root, "second stash\n")
        return first
    if case in ("packed_tag_only_name", "loose_tag_only_name_control"):
        git(root, "checkout", "-q", "-b", "side")
        (root / "a.txt").write_text("released work, tagged only\n")
        git(root, "commit", "-q", "--no-verify", "-am", "release")
        git(root, "tag", "lonetag")
        git(root, "checkout", "-q", "main")
        git(root, "branch", "-q", "-D", "side")
        tip = git_out(root, "rev-parse", "lonetag").strip()
        git(root, "reflog", "expire", "--expire=now", "--all")  # (HEAD's reflog named it: the tag alone does now)
        if case == "packed_tag_only_name":
            git(root, "pack-refs", "--all")
        return tip
    if case.startswith("reset_then_reflog_expire"):
        (root / "a.txt").write_text("committed work, on main only\n")
        git(root, "commit", "-q", "--no-verify", "-am", "work")
        return git_out(root, "rev-parse", "HEAD").strip()
    raise AssertionError(case)


def _named(root: Path, commit: str) -> bool:
    """Whether any ref or reflog entry still names ``commit`` (or a descendant of it)."""
    listed = subprocess.run(["git", "rev-list", "--all", "--reflog"], cwd=root, capture_output=True, text=True,
                            timeout=30, check=False).stdout.split()  # fmt: skip
    return commit in listed


@pytest.mark.parametrize("case", sorted(LINES))
async def test_work_left_unnamed_by_a_rewrite_of_the_git_dir_is_asked(workspace: Path, case: str) -> None:
    root = workspace
    work = _setup(case, root)
    assert _named(root, work)
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, LINES[case], cwd=str(root))
    assert out.get("exitCode") == 0, out
    still = _named(root, work)
    assert person.questions or still, (
        f"{case}: commit {work} named by nothing now, and nobody was asked",
        out.get("transaction"),
        out.get("changes"),
    )
