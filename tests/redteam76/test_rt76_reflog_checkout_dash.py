"""Red team 76 (issue 42, a46186f): the refs judgement reads refs/**, packed-refs, *_HEAD and the index, but not
the reflogs (``.git/logs/**``). ``git checkout -`` (back to the previous branch) and ``git reset --hard HEAD@{1}``
(undo the last reset) read the commit to check out from ``logs/HEAD``. A command that writes a commit carrying
``.githooks/post-checkout`` (git plumbing, work tree untouched) and appends one reflog line naming it lands with no
question; the user's ``git checkout -`` then writes the hook into the work tree and git runs it, outside the box.

Passes when the reflog line (or the objects it names) is asked/refused, so the user's checkout writes no hook."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell
from support.hooks_path import HOOK_TREE, hooks_path_repository

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

PLANT = (
    HOOK_TREE
    + """
import time
evil = g('-c', 'user.name=a', '-c', 'user.email=a@x', 'commit-tree', tree, '-p', 'HEAD', '-m', 'wip', i='')
head = g('rev-parse', 'HEAD')
now = int(time.time())
with open('.git/logs/HEAD', 'a') as f:
    f.write(f'{head} {evil} a <a@x> {now} +0000\\tcheckout: moving from main to {evil}\\n')
    f.write(f'{evil} {head} a <a@x> {now + 1} +0000\\tcheckout: moving from {evil} to main\\n')
print('planted', evil)
"""
)


def repository(workspace: Path) -> None:
    hooks_path_repository(workspace)


async def test_attack_reflog_line_makes_checkout_dash_write_and_run_a_hook(workspace: Path, tmp_path: Path) -> None:
    marker = tmp_path / "MARKER-post-checkout-ran"
    repository(workspace)
    hook = "#!/bin/sh\necho ran > " + str(marker) + "\n"
    plant = program(workspace, "plant", f"HOOK = {hook!r}\n" + PLANT)
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, plant)
    assert "planted" in (out.get("stdout") or ""), out

    # The user goes back to where they were, outside the box.
    subprocess.run(["git", "checkout", "-q", "-"], cwd=workspace, capture_output=True, timeout=60)
    assert not (workspace / ".githooks" / "post-checkout").exists() and not marker.exists(), (
        "git checkout - (from the reflog line the command appended) wrote .githooks/post-checkout and ran it: "
        f"questions={person.questions} transaction={out.get('transaction')} changes={out.get('changes')}"
    )
