"""Red team 95 F2 (issue 42: "undo takes any change made after the call (content, mode, attributes) as a conflict
rather than silently undoing it").

Red team 94 F1 was fixed for a rewrite's record (``Applied.mode`` now set by the apply's steps, compared by
``revert.as_left``), but not for:

* the records an undo writes (``revert._swap``/``_restore``: no ``mode``): an undo of that undo (a redo) silently
  undoes a ``chmod 600`` the person made after the undo;
* the ``user.*`` attributes (and so ACLs' user-visible part) a file was left with: ``as_left`` compared them only for
  a ``meta`` record, so an attribute set after the call was silently dropped by the undo that reports success
  (tested with red team 94's).

Safe behaviour: UndoConflict, the file as the person left it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_server_guard.changes.plan import UndoConflict
from mcp_server_guard.changes.transactions import Transactions
from support.settling import mode_of, notes_rewritten, settled_call

pytestmark = pytest.mark.anyio


async def test_a_redo_over_a_chmod_made_after_the_undo_is_a_conflict(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    await notes_rewritten(transactions, part, root)
    transactions.applier.undo("000000000001", "0000000000aa", [str(root)])
    assert (root / "notes.txt").read_text() == "v1\n"
    os.chmod(root / "notes.txt", 0o600)  # the person, after the undo: nobody else may read it
    conflict = False
    try:
        transactions.applier.undo("0000000000aa", "0000000000bb", [str(root)])  # undo of the undo
    except UndoConflict:
        conflict = True
    assert conflict and mode_of(root / "notes.txt") == 0o600, (
        f"the redo silently undid a chmod made after the undo: mode now {mode_of(root / 'notes.txt'):o}, "
        f"content {(root / 'notes.txt').read_text()!r}"
    )


async def test_a_redo_over_a_chmod_of_a_file_the_undo_brought_back_is_a_conflict(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    (root / "notes.txt").write_text("secret v1\n")
    os.chmod(root / "notes.txt", 0o644)
    await settled_removed(transactions, part, root)
    transactions.applier.undo("000000000001", "0000000000aa", [str(root)])  # notes.txt back
    assert (root / "notes.txt").read_text() == "secret v1\n"
    os.chmod(root / "notes.txt", 0o600)
    conflict = False
    try:
        transactions.applier.undo("0000000000aa", "0000000000bb", [str(root)])
    except UndoConflict:
        conflict = True
    assert conflict, "the redo silently took away a file whose mode the person changed after the undo"


async def settled_removed(transactions: Transactions, part: Path, root: Path) -> None:
    done = await settled_call(transactions, part, "000000000001", {}, removed=["notes.txt"])
    assert done.transaction == "applied", done
    assert not (root / "notes.txt").exists()
