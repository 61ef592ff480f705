"""Red team 94 F1 (issue 42, the undo's "changed after the call" checks): an undo of a call that rewrote or replaced
a file checks only that the file is the same inode with the same time and size as the call left it
(``revert.as_left``: ``identity``) — not its mode, nor its attributes. A mode or attribute change made after the
call (``chmod 600 notes.txt``: the person locks the file down; ``setfattr``/``setfacl``) leaves the time and size as
they were, so the undo reports success with no conflict and silently swaps in the pre-image with the mode and
attributes it had before: the person's later change is gone, the file readable by everyone again, and nothing said
it. A record of a mode change (``meta``) is checked for both (``as_left``'s meta branch); a rewrite's is not.

Safe behaviour: a path whose mode or ``user.*`` attributes changed after the call is a conflict (the undo changes
nothing unless forced), as a changed content is."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import pytest

from mcp_server_guard.changes.plan import UndoConflict
from mcp_server_guard.changes.transactions import Transactions
from support.boxed import run, shell, undo
from support.settling import mode_of, notes_rewritten

pytestmark = pytest.mark.anyio


async def test_control_a_content_change_after_the_call_is_a_conflict(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    notes = await notes_rewritten(transactions, part, root)
    notes.write_text("v3, longer\n")
    with pytest.raises(UndoConflict):
        transactions.applier.undo("000000000001", "0000000000aa", [str(root)])


async def test_a_mode_change_after_the_call_is_a_conflict(settled: tuple[Transactions, Path], tmp_path: Path) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    notes = await notes_rewritten(transactions, part, root)
    os.chmod(notes, 0o600)  # the person, after the call: nobody else may read it
    with contextlib.suppress(UndoConflict):
        transactions.applier.undo("000000000001", "0000000000aa", [str(root)])
    assert mode_of(root / "notes.txt") == 0o600, "the undo silently undid a mode change made after the call"


async def test_an_attribute_set_after_the_call_is_a_conflict(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    notes = await notes_rewritten(transactions, part, root)
    os.setxattr(notes, "user.reviewed", b"yes")  # the person, after the call
    with pytest.raises(UndoConflict):
        transactions.applier.undo("000000000001", "0000000000aa", [str(root)])
    assert os.getxattr(root / "notes.txt", "user.reviewed") == b"yes", "an attribute set after the call went unsaid"
    assert (root / "notes.txt").read_text() == "v2\n"


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
async def test_mcp_guard_undo_reports_a_later_mode_change_as_a_conflict(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("secret v1\n")
    os.chmod(workspace / "notes.txt", 0o644)
    async with shell(workspace) as client:
        out = await run(client, "printf 'secret v2\\n' > notes.txt")
    assert out["transaction"] == "applied", out
    os.chmod(workspace / "notes.txt", 0o600)
    undo_id, why = undo(str(out["auditId"]))
    assert not undo_id, "undo reported success over a mode change made after the call"
    assert "notes.txt" in why
    assert mode_of(workspace / "notes.txt") == 0o600


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
async def test_an_undo_puts_back_a_file_whose_attributes_the_command_itself_set(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("v1\n")
    os.setxattr(workspace / "notes.txt", "user.kept", b"before")
    async with shell(workspace) as client:
        out = await run(client, "printf 'v2\\n' > notes.txt.new && setfattr -n user.made -v 1 notes.txt.new"
                                " && mv notes.txt.new notes.txt")  # fmt: skip
    assert out["transaction"] == "applied", out
    assert os.getxattr(workspace / "notes.txt", "user.made") == b"1"
    undo_id, why = undo(str(out["auditId"]))
    assert undo_id, why
    assert (workspace / "notes.txt").read_text() == "v1\n"
    assert os.getxattr(workspace / "notes.txt", "user.kept") == b"before"


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
async def test_mcp_guard_undo_reports_attributes_changed_or_removed_after_the_call_as_conflicts(
    workspace: Path,
) -> None:
    for name in ("a.txt", "b.txt"):
        (workspace / name).write_text("v1\n")
        os.setxattr(workspace / name, "user.k", b"1")
    async with shell(workspace) as client:
        out = await run(client, "printf 'v2\\n' > a.txt && printf 'v2\\n' > b.txt")
    assert out["transaction"] == "applied", out
    assert os.getxattr(workspace / "a.txt", "user.k") == b"1"  # kept by the rewrite in place, as natively
    os.setxattr(workspace / "a.txt", "user.k", b"2")  # the person, after the call: changed
    os.removexattr(workspace / "b.txt", "user.k")  # and removed
    undo_id, why = undo(str(out["auditId"]))
    assert not undo_id, "undo reported success over attributes changed after the call"
    assert "a.txt" in why and "b.txt" in why, why
    assert (workspace / "a.txt").read_text() == "v2\n" and (workspace / "b.txt").read_text() == "v2\n"
