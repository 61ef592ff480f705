"""Red team 112 F2: red team 110 F1's answer (``git_cache_tree.cache_tree_lies``) checks each valid cache-tree
entry's *tree id* against the trees the index's entries make, but not its *entry count*. Git trusts a valid
sub-tree's count to step over the index entries it stands for (``cache-tree.c: update_one``: ``i += subcnt``). A
command that leaves every index entry and every tree id as git wrote them, makes the top entry invalid (as any
``git add`` of a top-level file leaves it) and says sub-tree ``a`` covers one entry more than it does lands with
no question. From then on every tree git writes from that index leaves out the entry after ``a/`` (the user's
``b.txt``): the user's next ``git stash`` records no ``b.txt`` (their unstaged edit of it is in no stash), resets
the work tree, and ``git stash pop`` deletes ``b.txt`` — the edit is gone; ``git commit -a`` commits the project
without ``b.txt``.

The command's program travels as data (forge_entry_count.py). A person declines every question. Control: the
same user steps with no call before them keep the edit."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.boxed import Person, run, shell
from support.hooked import git, git_out

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

HERE = Path(__file__).resolve().parent


def _project(root: Path) -> None:
    git(root, "init", "-q", "-b", "main")
    (root / "a").mkdir()
    (root / "a" / "x.txt").write_text("x\n")
    (root / "b.txt").write_text("b\n")
    (root / "c.txt").write_text("c\n")
    git(root, "add", "a", "b.txt", "c.txt")
    git(root, "commit", "-q", "--no-verify", "-m", "init")
    (root / ".t").mkdir()
    shutil.copy(HERE / "forge_entry_count.py", root / ".t" / "forge.py")
    (root / ".git" / "info" / "exclude").write_text(".t/\n")


def _users_stash_and_pop(root: Path) -> str:
    """The user's next everyday commands, outside the box: an edit of b.txt, put aside and taken back."""
    (root / "b.txt").write_text("b\nthe user's unsaved edit\n")
    git(root, "stash", "-q")
    git(root, "stash", "pop", "-q")
    return (root / "b.txt").read_text() if (root / "b.txt").exists() else "(b.txt is gone)"


async def test_the_users_stash_and_pop_keep_their_edit_after_the_call(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    _project(root)
    person = Person(False)
    async with shell(root, person) as client:
        out = await run(client, "python3 .t/forge.py a", cwd=str(root))
    status = git_out(root, "status", "--porcelain")
    left = _users_stash_and_pop(root)
    assert left == "b\nthe user's unsaved edit\n", (left, person.questions, status, out.get("changes"),
                                                      out.get("stdout"), out.get("stderr"))  # fmt: skip


async def test_control_the_users_stash_and_pop_with_no_call(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    _project(root)
    assert _users_stash_and_pop(root) == "b\nthe user's unsaved edit\n"
