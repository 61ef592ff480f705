"""Undo exactness (issue 40: "undo of that undo restores the post-call tree"): fuzzer seed 250013
(``tests/changes/test_fidelity.py 250000 40``), reduced. In one call a project file ``d/g.txt`` gets a new name
(``ln d/g.txt d/sub/n4.md/n5.md``) and is then swapped, through a temporary name, with a file the command made
(``h2.txt/in.txt``). The apply is exact (the tree equals the native one: ``h2.txt/in.txt`` and ``n5.md`` one file,
``d/g.txt`` the new file) and the undo is exact, but the undo of the undo (redo) lands ``h2.txt/in.txt`` and
``d/sub/n4.md/n5.md`` as two files: "after redo: hard links [['d/sub/n4.md/n5.md', 'h2.txt/in.txt']] != []".

The other shapes in COMMANDS land and undo/redo right (controls): the failure needs BOTH the new name in a new
directory and the swap's target inside a directory that replaced a linked name (``h2.txt`` of the ``h1.txt``/
``h2.txt`` pair).

Not limit (a) (nothing is rewritten in place) nor (b) (no two linked files with identical bytes). Why (guess): the
redo replays the call's record, where the link ``n5.md`` was recorded as a new name of the real file at
``d/g.txt``; by the time the redo makes it, that path holds the command's new file (or the real inode moved to
``h2.txt/in.txt`` first), so the name is made of the wrong file / made as a copy.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.differential import differential
from support.fidelity import seed_project

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


def setup(root: Path) -> None:
    root.rmdir()
    seed_project(root)


COMMANDS = [
    # the fuzzer's minimal script, as one call
    "rm h2.txt && mkdir h2.txt && printf 'in\\n' > h2.txt/in.txt\n"
    "mkdir d/sub/n4.md\n"
    "ln d/g.txt d/sub/n4.md/n5.md\n"
    "mv h2.txt/in.txt n15.md && mv d/g.txt h2.txt/in.txt && mv n15.md d/g.txt",
]


@pytest.mark.parametrize("command", COMMANDS)
async def test_redo_keeps_the_links(workspace: Path, command: str) -> None:
    problems, _out = await differential(workspace, setup, command)
    assert not problems, "\n".join(problems)
