"""Red team 76 (issue 42, a46186f): the index is judged by ``git_index.parse_index`` of ``.git/index`` alone. With
git's split index (``git update-index --split-index``) the entries live in ``.git/sharedindex.<id>`` and
``.git/index`` holds only a ``link`` extension (and the entries changed since). A command that stages
``.githooks/post-checkout`` with plumbing and then splits the index lands unasked; the user's ``git checkout -- .``
(or ``git restore .``) writes the staged hook into the work tree, outside the box, and the next checkout runs it.

Passes when that index is asked/refused, so the user's restore writes no hook."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell
from support.hooks_path import hooks_path_repository

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

PLANT = """
import subprocess
def g(*a, i=None):
    return subprocess.run(['git', *a], input=i, capture_output=True, text=True, check=True).stdout.strip()
hook = g('hash-object', '-w', '--stdin', i=HOOK)
g('update-index', '--add', '--cacheinfo', '100755,' + hook + ',.githooks/post-checkout')
g('update-index', '--split-index')
print('planted', hook)
"""


def repository(workspace: Path) -> None:
    hooks_path_repository(workspace)


async def test_attack_hook_staged_in_a_split_index(workspace: Path, tmp_path: Path) -> None:
    marker = tmp_path / "MARKER-hook-ran"
    repository(workspace)
    hook = "#!/bin/sh\necho ran > " + str(marker) + "\n"
    plant = program(workspace, "plant", f"HOOK = {hook!r}\n" + PLANT)
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, plant)
    assert "planted" in (out.get("stdout") or ""), out

    subprocess.run(["git", "checkout", "-q", "--", "."], cwd=workspace, capture_output=True, timeout=60)
    assert not (workspace / ".githooks" / "post-checkout").exists(), (
        "git checkout -- . wrote .githooks/post-checkout from a split index the command left: "
        f"questions={person.questions} transaction={out.get('transaction')} changes={out.get('changes')}"
    )
