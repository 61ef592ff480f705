"""Red team 105 F1: commits left with no name by a call that is not asked, past ``git_kept.unnamed_by_rewrites``.

- a packed tag (its only name) moved by ``git tag -f`` / ``git update-ref``: git writes a *new* loose ref that shadows
  the packed line and leaves packed-refs as it was, so no naming file is rewritten (the same on a loose tag is a
  rewrite, and asked: the control);
- a rewrite whose after-text holds the lost id anywhere: ``_named_ids`` takes every 40-hex word of a reflog, message
  included, as a name (git reads only the two id fields), so a commit or stash whose message is the id hides it.

The command lines travel as data (git_names_lost.json). A person declines every question; a case fails when the call
applied with no question and the commit is named by no ref and no reflog entry any more (``git rev-list --all
--reflog``)."""

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
    """The project for ``case``; returns the commit whose last name the line takes."""
    one_commit(root)
    if case.startswith("stash_"):
        first = stashed(root, "first stash: only here\n")
        stashed(root, "second stash\n")
        return first
    git(root, "checkout", "-q", "-b", "side")
    (root / "a.txt").write_text("released work, tagged only\n")
    git(root, "commit", "-q", "--no-verify", "-am", "release")
    git(root, "tag", "lonetag")
    git(root, "checkout", "-q", "main")
    git(root, "branch", "-q", "-D", "side")
    tip = git_out(root, "rev-parse", "lonetag").strip()
    git(root, "reflog", "expire", "--expire=now", "--all")  # (HEAD's reflog named it: the tag alone does now)
    if case.startswith("packed_"):
        git(root, "pack-refs", "--all")
    return tip


def _named(root: Path, commit: str) -> bool:
    """Whether git still reaches ``commit`` from any ref or reflog entry."""
    listed = subprocess.run(["git", "rev-list", "--all", "--reflog"], cwd=root, capture_output=True, text=True,
                            timeout=30, check=False).stdout.split()  # fmt: skip
    return commit in listed


@pytest.mark.parametrize("case", sorted(LINES))
async def test_work_left_unnamed_is_asked(workspace: Path, case: str) -> None:
    root = workspace
    work = _setup(case, root)
    assert _named(root, work)
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, LINES[case], cwd=str(root))
    still = _named(root, work)
    assert person.questions or still, (
        f"{case}: commit {work} named by nothing now, and nobody was asked",
        out.get("exitCode"),
        out.get("transaction"),
        out.get("changes"),
    )
