"""Red team 97: a change of a file's group (or owner) after the call is silently undone.

``plan.changed_since`` (used by ``revert.as_left``) compares the mode, the number of names and a digest of the user.*
attributes and ACLs the call left; identity is (device, inode, mtime, size). ``chgrp team notes.txt`` after the call
moves only the ctime and the group: the undo takes the path as the call left it, renames the pre-image (the old
group) over it and says success — the person's later chgrp is gone and nothing said so (the class of red team 94 F1's
``chmod 600`` after the call). Safe: UndoConflict, or the undo keeps the group the person gave.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_server_guard.changes.plan import UndoConflict
from mcp_server_guard.changes.transactions import Transactions
from support.settling import applied_call

pytestmark = pytest.mark.anyio

TEAM = 4242  # a group the person gives the file after the call (the test runs as root: chown may)


async def test_an_undo_over_a_chgrp_made_after_the_call_is_a_conflict(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    (root / "notes.txt").write_text("v1\n")
    await applied_call(transactions, part, "000000000001", {"notes.txt": "v2\n"})
    os.chown(root / "notes.txt", -1, TEAM)  # the person, after the call: `chgrp team notes.txt`
    conflict = False
    try:
        transactions.applier.undo("000000000001", "0000000000aa", [str(root)])
    except UndoConflict:
        conflict = True
    group = os.stat(root / "notes.txt").st_gid
    assert conflict or group == TEAM, (
        f"the undo said success over a chgrp made after the call: notes.txt's group is {group}, not {TEAM}, "
        f"content {(root / 'notes.txt').read_text()!r}"
    )
