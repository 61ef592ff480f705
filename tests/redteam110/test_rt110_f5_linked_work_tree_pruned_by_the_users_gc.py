"""Red team 110 F5: a linked work tree's admin dir (``.git/worktrees/<id>``: its HEAD, its index, its reflog, a
rebase in progress) is deleted by the user's next ``git gc``, after a command that only rewrote its ``gitdir`` file
to name a place that does not exist (inside the root) and set its index's time back (a "touch": applied, shown,
not counted). Neither is asked. ``git gc`` runs ``git worktree prune``, which takes a work tree whose ``gitdir``
names nothing and whose index is older than ``gc.worktreePruneExpire`` (3 months) for one the user deleted, and
deletes its admin dir. The work tree ``wt`` is then no repository ("not a git repository"): its staged work and the
commit made on its detached HEAD (named by nothing else) are gone from git, and ``mcp-guard undo`` of the call
cannot bring back what gc deleted.

The command line is plain (no payload). A person declines every question. Control: the user's ``git gc`` with no
call keeps the work tree; and the gitdir rewritten to a place outside the root is refused or asked."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from support.boxed import Person, run, shell, undo
from support.hooked import git, git_out

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

CALL = "printf '%s\\n' \"$PWD/{where}\" > .git/worktrees/wt/gitdir && touch -d 2020-01-01 .git/worktrees/wt/index"


def _project(root: Path) -> str:
    """A repository with a linked work tree ``wt`` (detached: one commit of its own, named by nothing else, and a
    staged file). The commit's id."""
    git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("a\n")
    git(root, "add", "a.txt")
    git(root, "commit", "-q", "--no-verify", "-m", "init")
    (root / ".git" / "info" / "exclude").write_text("wt/\n")
    git(root, "worktree", "add", "-q", "--detach", "wt")
    (root / "wt" / "b.txt").write_text("work in the linked tree\n")
    git(root / "wt", "add", "b.txt")
    git(root / "wt", "commit", "-q", "--no-verify", "-m", "wip")
    (root / "wt" / "c.txt").write_text("staged work\n")
    git(root / "wt", "add", "c.txt")
    return str(git_out(root / "wt", "rev-parse", "HEAD")).strip()


def _intact(root: Path, commit: str) -> tuple[bool, str]:
    done = subprocess.run(["git", "-C", str(root / "wt"), "rev-parse", "HEAD"], capture_output=True, text=True,
                          timeout=30, check=False)  # fmt: skip
    staged = subprocess.run(["git", "-C", str(root / "wt"), "diff", "--cached", "--name-only"], capture_output=True,
                            text=True, timeout=30, check=False)  # fmt: skip
    ok = done.stdout.strip() == commit and staged.stdout.split() == ["c.txt"]
    return ok, (done.stdout + done.stderr + staged.stdout).strip()


async def test_linked_work_tree_survives_the_users_gc(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    commit = _project(root)
    person = Person(False)
    async with shell(root, person) as client:
        out = await run(client, CALL.format(where="gone/.git"), cwd=str(root))
    git(root, "gc", "-q")  # the user's next gc (or the automatic one after a commit)
    undone = undo(str(out["auditId"])) if out["changes"]["undo"] else ("", "nothing landed")
    ok, said = _intact(root, commit)
    assert ok, (said, person.questions, out.get("transaction"), out["changes"], undone)


async def test_control_gc_with_no_call(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    commit = _project(root)
    git(root, "gc", "-q")
    assert _intact(root, commit)[0]


async def test_control_gitdir_naming_a_place_outside_the_root(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    commit = _project(root)
    person = Person(False)
    async with shell(root, person) as client:
        out = await run(client, CALL.format(where="../elsewhere/.git"), cwd=str(root))
    git(root, "gc", "-q")
    assert _intact(root, commit)[0], (person.questions, out["changes"])
