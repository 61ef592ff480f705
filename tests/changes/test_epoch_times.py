"""A modification time of 0 (the epoch, as reproducible builds set with SOURCE_DATE_EPOCH=0) is a time like any
other: a file or a directory the command set to it lands so, and its undo and the undo of that undo are exact
(fuzz 21 F6: 0 was taken for "no time", so the real file kept its old time and a redo the pre-call one). Each
command is compared with the same command run natively, then undone and redone."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.differential import OLD_NS, differentials, failed

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


def project(root: Path) -> None:
    (root / "d" / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("a\n")
    (root / "d" / "sub" / "f.txt").write_text("f\n")
    os.link(root / "a.txt", root / "d" / "h")
    for p in [root / "a.txt", root / "d" / "sub" / "f.txt", root / "d" / "sub", root / "d", root]:
        os.utime(p, ns=(OLD_NS, OLD_NS), follow_symlinks=False)


COMMANDS = [
    "touch -d @0 a.txt",
    "touch -d @0 d/sub",
    "printf 'q\\n' > d/sub/new.txt && touch -d @0 d/sub",
    "touch -d @0 d/sub/f.txt d/sub d",
    "chmod 600 a.txt && touch -d @0 d/h",
    "ln -s a.txt l && touch -h -d @0 l",
    "mkdir n && touch -d @0 n && touch -d @0 d/sub/f.txt",
]


async def test_a_time_of_zero_the_command_set_lands_and_undoes_exactly(workspace: Path) -> None:
    cases = await differentials(workspace, project, COMMANDS)
    assert not (problems := failed(cases, lambda case: case.found)), problems
