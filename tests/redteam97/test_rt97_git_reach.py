"""Red team 97: a branch's deletion counted as git's bookkeeping (git_kept._Reach) where git keeps nothing.

(A) ``git branch -d feature`` of a branch at a merged commit deletes its reflog too; the reflog's older lines held the
only name of work the user had moved the branch off (``feature@{1}``): only the reflog's last line is looked at.
(B, C) The command writes the lone branch's id under a name git does not take for a ref (``refs/heads/keep.lock``
loose, or a line of ``packed-refs`` with such a name), then ``git branch -D lone``: the walk starts from it, git does
not (a broken ref name keeps no object from ``git gc``), so the work nothing else names is deleted unasked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from support.boxed import Person, run, shell
from support.fidelity import GIT_ENV
from support.hooked import git

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


def _out(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, timeout=30,
                          env={**os.environ, **GIT_ENV})  # fmt: skip
    return done.stdout.strip()


def _repository(workspace: Path) -> str:
    """main with a few commits, and ``lone``: one commit nothing else reaches. Returns that commit's id."""
    (workspace / "src").mkdir()
    for i in range(3):
        (workspace / "src" / f"m{i}.py").write_text(f"value = {i}\n")
    git(workspace, "init", "-q", "-b", "main")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "--no-verify", "-m", "init")
    (workspace / "src" / "m0.py").write_text("value = 100\n")
    git(workspace, "commit", "-q", "--no-verify", "-am", "change")
    # lone's commit made without HEAD on it (as `git fetch origin x:lone` or a commit in a removed worktree): the
    # branch and its reflog are the only names of it.
    (workspace / "src" / "m1.py").write_text("only on lone: a day's work\n")
    git(workspace, "add", "src/m1.py")
    tree = _out(workspace, "write-tree")
    work = _out(workspace, "commit-tree", tree, "-p", "main", "-m", "only here")
    git(workspace, "reset", "-q", "--hard", "main")
    git(workspace, "update-ref", "-m", "work", "refs/heads/lone", work, "")
    assert work not in _out(workspace, "log", "-g", "--format=%H", "HEAD").split()
    return work


def _gone_after_gc(workspace: Path, work: str) -> bool:
    """Whether the user's next ``git gc --prune=now`` (outside the box) deletes ``work``."""
    git(workspace, "gc", "-q", "--prune=now")
    return subprocess.run(["git", "cat-file", "-e", work], cwd=workspace, capture_output=True, timeout=30,
                          env={**os.environ, **GIT_ENV}).returncode != 0  # fmt: skip


def _names_of(workspace: Path, work: str) -> str:
    """What git itself still names ``work`` by (refs and reflogs), as ``git gc`` sees it."""
    refs = _out(workspace, "for-each-ref", "--contains", work, "--format=%(refname)")
    logs = _out(workspace, "log", "-g", "--all", "--format=%H")
    return refs + ("\n(reflog)" if work in logs.split() else "")


async def test_branch_d_deletes_the_reflog_that_alone_named_work(workspace: Path) -> None:
    work = _repository(workspace)
    # The user's work lives on only in the reflog of `feature`: the branch was made at it and then moved back to
    # main (git update-ref, as `git fetch` or `git branch -f` move a branch HEAD is not on); HEAD's log never held it.
    git(workspace, "update-ref", "-m", "work", "refs/heads/feature", work, "")
    git(workspace, "branch", "-q", "-D", "lone")  # (set-up: lone gone, its work named by feature alone)
    git(workspace, "update-ref", "-m", "moved back", "refs/heads/feature", _out(workspace, "rev-parse", "main"))
    assert "(reflog)" in _names_of(workspace, work)
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, "git branch -q -d feature")
    named = _names_of(workspace, work)
    assert person.questions or out["transaction"] != "applied" or named, (
        f"the only name of work ({work[:10]}, feature@{{1}}) deleted unasked: {out.get('transaction')}; "
        f"gone after the user's next gc: {_gone_after_gc(workspace, work)}"
    )


@pytest.mark.parametrize(
    "line",
    [
        "git rev-parse lone > .git/refs/heads/keep.lock && git branch -q -D lone",
        'echo "$(git rev-parse lone) refs/heads/keep.lock" >> .git/packed-refs && git branch -q -D lone',
    ],
)
async def test_a_name_git_does_not_read_makes_lone_work_look_reached(workspace: Path, line: str) -> None:
    work = _repository(workspace)
    if "packed-refs" in line:
        git(workspace, "pack-refs", "--all")
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, line)
    named = _names_of(workspace, work)
    assert person.questions or out["transaction"] != "applied" or named, (
        f"lone's work ({work[:10]}) left with no name git reads, unasked: {out.get('transaction')} "
        f"stderr={out.get('stderr')!r}; gone after the user's next gc: {_gone_after_gc(workspace, work)}"
    )
