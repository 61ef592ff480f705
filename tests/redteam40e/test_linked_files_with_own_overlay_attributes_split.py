"""Fidelity (issue 40): a project file with two names (``l1``/``l2``, hard links) that carries an attribute of its
own under a ``user.overlay.`` name (``user.overlay.note=ln``: data, any user may set it) is no longer one file after
a single, simple operation through shell_exec:

* ``echo more >> l1``: natively both names show the new bytes (one inode). Through shell_exec ``l2`` keeps the old
  bytes and time, and ``l1``/``l2`` are two files (hard-link group gone). docs/shell_exec.md "Hard links": "a file
  with several names in the project that the command rewrites through one name is rewritten under all of its
  names".
* ``mv l1 l3``: natively ``l3``/``l2`` are one file; through shell_exec two files ("a file with several names that
  the command renames is renamed, so its names stay one file").
* ``echo more >> s1`` (other name ``d/s2`` in another directory): ``d/s2`` keeps the old bytes, the pair splits.
* Controls that land right: ``ln l1 l4``, ``chmod 600 l1``, ``touch -d 2001-01-01 l1``, ``mv d d2``.

Not documented limit (a): each command does ONE thing to the file. The same commands on an unmarked linked pair
land right (tests/changes/test_fidelity_links.py).

Why (a guess from the design): the escape layer (changes/escapes.py) replicates each marked entry as a file of its
own, one replica per NAME, so on the copy ``l1`` and ``l2`` are two unrelated lower files, neither showing
``st_nlink`` 2 nor sharing an inode; overlayfs's ``origin`` of the copied-up file points at the replica, not the
real inode. The reader's linked-file logic (rewrite under every name, rename of a linked name) never learns that
the real ``l1`` has another name.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.differential import differential, one_call

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

OLD_NS = 1_200_000_000 * 10**9


def linked_marked(root: Path) -> None:
    (root / "l1").write_text("linked marked\n")
    os.setxattr(root / "l1", "user.overlay.note", b"ln")
    os.link(root / "l1", root / "l2")
    (root / "d").mkdir()
    (root / "s1").write_text("spread marked\n")
    os.setxattr(root / "s1", "user.overlay.note", b"sp")
    os.link(root / "s1", root / "d" / "s2")
    for p in ("l1", "s1"):
        os.utime(root / p, ns=(OLD_NS, OLD_NS))
    os.utime(root / "d", ns=(OLD_NS, OLD_NS))


COMMANDS = [
    "echo more >> l1",
    "mv l1 l3",
    "chmod 600 l1",
    "echo more >> s1",
    "mv d d2",
]


@pytest.mark.parametrize("command", COMMANDS)
async def test_a_marked_linked_file_stays_one_file_first_call(workspace: Path, command: str) -> None:
    problems, _out = await differential(workspace, linked_marked, command)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("command", COMMANDS[:1])
async def test_a_marked_linked_file_stays_one_file_later_call(workspace: Path, command: str) -> None:
    problems, _out = await differential(workspace, linked_marked, command, warmup=one_call)
    assert not problems, "\n".join(problems)
