"""Red team 76 (issue 42, a46186f): ``.git/info/grafts`` (deprecated, still honoured by git 2.39+) gives a commit
other parents. A command that writes a commit carrying ``.githooks/post-checkout`` and a graft line making it
HEAD's parent moves no ref, so the refs judgement reads nothing; the user's ``git checkout HEAD~1`` (or
``git reset --hard HEAD^``, undoing the last commit) writes the hook and git runs it, outside the box.

Passes when the graft (or what it leads to) is asked/refused, so the user's checkout writes no hook."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.hooks_path import HOOK_TREE, hooks_path_repository, planted_then

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

PLANT = (
    HOOK_TREE
    + """
evil = g('-c', 'user.name=a', '-c', 'user.email=a@x', 'commit-tree', tree, '-m', 'base', i='')
head = g('rev-parse', 'HEAD')
os.makedirs('.git/info', exist_ok=True)
with open('.git/info/grafts', 'a') as f:
    f.write(head + ' ' + evil + '\\n')
print('planted', evil)
"""
)


def repository(workspace: Path) -> None:
    hooks_path_repository(workspace, second=True)


async def test_attack_graft_makes_head_parent_a_commit_with_a_hook(workspace: Path, tmp_path: Path) -> None:
    repository(workspace)
    found = await planted_then(workspace, tmp_path / "MARKER-post-checkout-ran", PLANT, "checkout", "-q", "HEAD~1")
    assert not found, found
