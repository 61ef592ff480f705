"""A linked work tree's ``gitdir`` file: git's own moves land (``git worktree move``, a new ``worktree add``); one
deleted while the work tree's state stays, or naming a place that is not there, is refused — every ``git gc`` runs
``git worktree prune``, which deletes such a work tree's state (red team 110 F5)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support.boxed import Person, run, shell
from support.hooked import git, git_out

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


def _project(root: Path) -> None:
    git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("a\n")
    (root / ".gitignore").write_text("wt*/\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "--no-verify", "-m", "init")
    git(root, "worktree", "add", "-q", "--detach", "wt")


async def test_git_worktree_move_and_add_land(workspace: Path) -> None:
    _project(workspace)
    person = Person(False)
    async with shell(workspace, person) as client:
        moved = await run(client, "git worktree move wt wt2 && git worktree add -q --detach wt3", cwd=str(workspace))
    assert moved.get("transaction") == "applied" and not person.questions, moved
    listed = git_out(workspace, "worktree", "list", "--porcelain")
    assert f"worktree {workspace / 'wt2'}" in listed and f"worktree {workspace / 'wt3'}" in listed


async def test_a_work_trees_gitdir_deleted_is_refused_and_the_state_survives_gc(workspace: Path) -> None:
    _project(workspace)
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, "rm .git/worktrees/wt/gitdir", cwd=str(workspace))
    assert out["changes"]["refused"] == 1 and (workspace / ".git/worktrees/wt/gitdir").is_file(), json.dumps(out)
    git(workspace, "gc", "-q")
    assert (workspace / ".git/worktrees/wt/HEAD").is_file()
