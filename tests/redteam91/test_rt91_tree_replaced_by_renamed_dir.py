"""Red team 91 F1 (issue 42, claim 4): deletion questions look at what was lost — but a directory deleted and
replaced by another one renamed over its name (``rm -rf src && mv src_new src``, the everyday "swap in the
regenerated tree") loses every file of the old one whose name the new one also has, with no question at all.

``effects._tally`` skips any change whose (root, path) is in ``moves`` — and ``moves`` holds both ends of every
move pair by path. The new ``src/a.py`` (moved from ``src_new/a.py``) puts the path ``src/a.py`` in ``moves``, so the
*deletion* of the user's old ``src/a.py`` (other bytes) is taken for a move's end and not counted; the tree question
for ``src/`` counts only held files not in ``moves``: none. In a project no git repository keeps (and for work git
has no copy of) the user's files are gone unasked (they are in the history: an undo brings them back).

Safe behaviour: the command is asked about (the deletion of src/ and its 5 files, as ``rm -rf src`` alone is)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.boxed import Person, run, shell, snap, undo
from support.copies import Copy, overlays_work

POLICY = load_policy()
SWAP = "rm -rf src && mv src_new src"


def _project(root: Path) -> None:
    (root / "src").mkdir(parents=True)
    (root / "src_new").mkdir()
    for name in ("a.py", "b.py", "c.py", "d.py", "e.py"):
        (root / "src" / name).write_text(f"# the user's own work in {name}, kept nowhere else\nx = 1\n")
        (root / "src_new" / name).write_text(f"# generated {name}\n")


@pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
def test_a_tree_replaced_by_a_renamed_one_is_asked_about(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _project(copy.root)
    changes = copy.run(SWAP)
    judged = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    assert judged.asks, "the user's src/*.py were deleted (replaced by src_new's) and nobody was asked"


@pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
def test_control_deleting_the_tree_alone_is_asked(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _project(copy.root)
    changes = copy.run("rm -rf src")
    judged = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    assert any("src/" in ask for ask in judged.asks), judged.asks


@pytest.mark.anyio
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
async def test_the_server_asks_before_the_swap_loses_the_users_files(workspace: Path) -> None:
    _project(workspace)
    person = Person()
    async with shell(workspace, person) as client:
        out = await run(client, SWAP, cwd=str(workspace))
    assert (workspace / "src" / "a.py").read_text().startswith("# generated")  # it ran (the person said yes)
    assert person.questions, f"applied unasked: {out.get('changes')}"


@pytest.mark.anyio
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
async def test_the_swap_says_what_it_deleted_and_its_undo_brings_the_tree_back(workspace: Path) -> None:
    """What the swap lost is kept (an undo brings the tree back exactly), and the result's summary says the user's
    5 files were deleted (it said "move 10 files to src/", deleted 0, before)."""
    _project(workspace)
    before = snap(workspace)
    async with shell(workspace, Person()) as client:
        out = await run(client, SWAP, cwd=str(workspace))
    assert out["changes"]["deleted"] == 5 and "delete 5 files" in out["changes"]["summary"], out["changes"]
    undo_id, why = undo(out["auditId"])
    assert undo_id, why
    assert snap(workspace) == before
