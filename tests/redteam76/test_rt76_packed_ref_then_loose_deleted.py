"""Red team 76 (issue 42, a46186f): a branch's loose ref file wins over its packed-refs line. The refs judgement
(``changes/git_refs.py``) resolves refs loose-first and skips deletions. Two calls, each judged alone, plant a
branch: call 1 rewrites packed-refs so that ``refs/heads/old`` names a commit carrying ``.githooks/post-checkout``
(the loose file still names the user's commit, so the branch "did not move"); call 2 only deletes the loose file
``.git/refs/heads/old`` (a deletion: not judged). Now ``old`` resolves to the planted commit, and the user's
``git checkout old`` writes the hook and git runs it, outside the box.

Today call 1 lands unasked and call 2 is asked only as "delete 1 file under .git/refs/heads/ ... Git has no copy of
.git/refs/heads/old (modified or untracked)": a question that says nothing of the hook the branch then brings.
Passes when a question (either call's) names .githooks/post-checkout."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell
from support.hooked import git
from support.hooks_path import HOOK_TREE, hooks_path_repository

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

PLANT = (
    HOOK_TREE
    + """
evil = g('-c', 'user.name=a', '-c', 'user.email=a@x', 'commit-tree', tree, '-p', 'HEAD', '-m', 'fix', i='')
with open('.git/packed-refs', 'w') as f:
    f.write('# pack-refs with: peeled fully-peeled sorted \\n' + evil + ' refs/heads/old\\n')
print('planted', evil)
"""
)


def repository(workspace: Path) -> None:
    hooks_path_repository(workspace)
    git(workspace, "branch", "old")  # a loose ref, as git leaves a new branch


async def test_attack_packed_ref_planted_then_loose_ref_deleted(workspace: Path, tmp_path: Path) -> None:
    marker = tmp_path / "MARKER-post-checkout-ran"
    repository(workspace)
    hook = "#!/bin/sh\necho ran > " + str(marker) + "\n"
    plant = program(workspace, "plant", f"HOOK = {hook!r}\n" + PLANT)
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        first = await run(client, plant)
        second = await run(client, "rm -f .git/refs/heads/old")
    assert "planted" in (first.get("stdout") or ""), first

    # The second call's question must say what the deletion does: branch `old` then names the planted commit.
    assert any("post-checkout" in q for q in person.questions), (
        "the loose ref's deletion (which makes branch old resolve to the planted packed-refs commit carrying "
        ".githooks/post-checkout) was asked only as an untracked file's deletion, or not at all: "
        f"questions={person.questions} first={first.get('transaction')} {first.get('changes')} "
        f"second={second.get('transaction')} {second.get('changes')}"
    )
