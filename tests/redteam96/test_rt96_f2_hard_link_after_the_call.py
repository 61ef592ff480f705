"""Red team 96 F2 (claim B: "any change made after the call — content, mode, attributes, a new hard link, a rename —
is a conflict (UNDO_CONFLICT) rather than silently undone; the same for an undo of an undo (redo)").

A person gives a file a call rewrote a second name (``ln notes.txt keep.txt``: a hard link, made after the call).
``revert.as_left`` compares the path's identity (device, inode, mtime, size), mode and attributes: a new name moves
only the ctime and the link count, so the path is taken as the call left it. The undo then puts the pre-image at
``notes.txt`` by a rename and says success: the two names the person made one file are now two files, one with the
old bytes and one with the new — the tree is not as the person left it plus the call undone, and nothing said so.
The same for a redo after the undo (the file the undo brought back, given a second name).

Safe behaviour: UndoConflict (the path changed after the call: it has a name it did not have), or an undo that
keeps the names one file.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_server_guard.changes.plan import UndoConflict
from mcp_server_guard.changes.transactions import Transactions
from support.settling import notes_rewritten

pytestmark = pytest.mark.anyio


def _one_file(a: Path, b: Path) -> bool:
    return os.stat(a).st_ino == os.stat(b).st_ino


async def test_an_undo_over_a_hard_link_made_after_the_call_is_a_conflict(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    await notes_rewritten(transactions, part, root)
    os.link(root / "notes.txt", root / "keep.txt")  # the person, after the call: a second name of the same file
    conflict = False
    try:
        transactions.applier.undo("000000000001", "0000000000aa", [str(root)])
    except UndoConflict:
        conflict = True
    assert conflict or _one_file(root / "notes.txt", root / "keep.txt"), (
        "the undo said success over a hard link made after the call: notes.txt "
        f"{(root / 'notes.txt').read_text()!r} and keep.txt {(root / 'keep.txt').read_text()!r} are now two files"
    )


async def test_a_redo_over_a_hard_link_made_after_the_undo_is_a_conflict(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    await notes_rewritten(transactions, part, root)
    transactions.applier.undo("000000000001", "0000000000aa", [str(root)])
    os.link(root / "notes.txt", root / "keep.txt")  # the person, after the undo
    conflict = False
    try:
        transactions.applier.undo("0000000000aa", "0000000000bb", [str(root)])  # the redo
    except UndoConflict:
        conflict = True
    assert conflict or _one_file(root / "notes.txt", root / "keep.txt"), (
        "the redo said success over a hard link made after the undo: notes.txt "
        f"{(root / 'notes.txt').read_text()!r} and keep.txt {(root / 'keep.txt').read_text()!r} are now two files"
    )
