"""Red team 76 (issue 42, a46186f): ``changes/git_refs.py`` judges HEAD, ORIG_HEAD, MERGE_HEAD, CHERRY_PICK_HEAD,
REVERT_HEAD, AUTO_MERGE, refs/** and packed-refs — not ``FETCH_HEAD`` (though ``_resolve`` knows its lines). A
command that writes a commit carrying ``.githooks/post-checkout`` and a FETCH_HEAD naming it lands unasked; the
user's ``git checkout FETCH_HEAD`` (how a fetched pull request is looked at) or ``git merge FETCH_HEAD`` writes the
hook and git runs it, outside the box.

Passes when that FETCH_HEAD is asked/refused, so the user's checkout writes no hook."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.hooks_path import HOOK_TREE, hooks_path_repository, planted_then

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

PLANT = (
    HOOK_TREE
    + """
evil = g('-c', 'user.name=a', '-c', 'user.email=a@x', 'commit-tree', tree, '-p', 'HEAD', '-m', 'fix', i='')
with open('.git/FETCH_HEAD', 'w') as f:
    f.write(f"{evil}\\t\\tbranch 'fix' of ../upstream\\n")
print('planted', evil)
"""
)


def repository(workspace: Path) -> None:
    hooks_path_repository(workspace)


async def test_attack_fetch_head_names_a_commit_with_a_hook(workspace: Path, tmp_path: Path) -> None:
    repository(workspace)
    found = await planted_then(workspace, tmp_path / "MARKER-post-checkout-ran", PLANT, "checkout", "-q", "FETCH_HEAD")
    assert not found, found
