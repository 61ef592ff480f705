"""Red team 63 F2, F3, F7: a call that must look into a project directory its owner may not read or search (mode
000, a 0300 drop box, 0100) was "its changes could not be read; nothing applied" — renaming it, writing in it,
walking the whole root for the other names of a file — and the undo of a call that made one was refused. Within a
read of the change set, an apply or an undo, such a directory of the user's is now let in (owner bits only: u+rx to
look, u+rwx to write in) and its mode given back at the scope's end (``trees.own_dirs_as_found(real=...)``); the
ctime that moved only for that is no change (``name_changes.note``). Each case runs natively on a copy and through
the real server, trees compared, then undone and redone. The trees are read in a user namespace of their own
(``unshare -r``: this user's files readable without a chmod), so the look changes nothing the undo checks. The
command lines are data (rt63_closed_dirs.json); the module runs again without CAP_DAC_OVERRIDE
(``support.as_a_user``)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import support.differential as differential_module
from mcp_server_guard.audit import new_audit_id
from mcp_server_guard.changes.apply import Applier
from mcp_server_guard.files.history import HistoryStore
from support.as_a_user import again_as_a_user, as_a_user, snapshot_unopened
from support.copies import Copy
from support.differential import differentials, failed
from support.elsewhere import history_elsewhere
from support.fidelity import differences

CASES = json.loads((Path(__file__).parent / "rt63_closed_dirs.json").read_text())
KEPT = json.loads((Path(__file__).parent / "rt63_closed_dirs_kept.json").read_text())
pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None or shutil.which("unshare") is None, reason="no bwrap, unshare"),
]
OLD_NS = 1_000_000_000 * 10**9


def test_closed_directories_as_a_user(tmp_path: Path) -> None:
    again_as_a_user(__file__, tmp_path)


def project(root: Path) -> None:
    (root / "d").mkdir()
    (root / "h1").write_text("linked\n")
    os.link(root / "h1", root / "d" / "h3")
    (root / "xdir").mkdir()
    (root / "xdir" / "inner.txt").write_text("inner\n")
    (root / "locked").mkdir()
    (root / "locked" / "f").write_text("f\n")
    for p in root.rglob("*"):
        os.utime(p, ns=(OLD_NS, OLD_NS), follow_symlinks=False)
    (root / "xdir").chmod(0o300)
    (root / "locked").chmod(0)
    os.utime(root, ns=(OLD_NS, OLD_NS))


@as_a_user
async def test_a_call_into_a_directory_its_owner_may_not_read_lands_and_undoes_as_natively(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One server, one call after the other, each case in copies of its own below one root: a later call's look into
    # an earlier one's 000 directory (walking the root for a file's other names) moved its ctime, and the undo of the
    # earlier call, in this process, took that for someone else's change (``name_changes.keep_looks_in``).
    monkeypatch.setattr(differential_module, "snapshot", snapshot_unopened)
    cases = await differentials(workspace, project, CASES)
    assert not (problems := failed(cases, lambda c: c.found)), problems
    assert not [(c.name, c.out["changes"]) for c in cases if c.out["changes"]["conflicts"]]


@as_a_user
@pytest.mark.parametrize("elsewhere", [False, True], ids=["same-fs", "history-elsewhere"])
@pytest.mark.parametrize("case", sorted(KEPT))
def test_a_closed_directory_kept_in_the_history_comes_back_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str, elsewhere: bool
) -> None:
    # A tree holding a 000 directory deleted with the history on another file system was "not deleted: Permission
    # denied" (its copy could not enter it); the copy now lets it in for the apply, and keeps its mode.
    if elsewhere:
        history_elsewhere(monkeypatch, tmp_path)
    copy = Copy(tmp_path / "c")
    root = copy.root
    (root / "locked" / "s").mkdir(parents=True)
    (root / "locked" / "f").write_text("f\n")
    (root / "d" / "in").mkdir(parents=True)
    for closed in (root / "locked", root / "d" / "in"):
        closed.chmod(0)
    before = snapshot_unopened(root)
    changes = copy.run(KEPT[case])
    store = HistoryStore(tmp_path / "history", 1 << 30)
    call, undo = new_audit_id(), new_audit_id()
    outcome = Applier(store).apply([changes], call, copy.started)
    assert not outcome.conflicts, outcome.conflicts
    after = snapshot_unopened(root)
    Applier(store).undo(call, undo, [str(root)])
    assert not (found := differences(before, snapshot_unopened(root), all_mtimes=True)), found
    Applier(store).undo(undo, new_audit_id(), [str(root)])
    assert not (found := differences(after, snapshot_unopened(root), all_mtimes=True)), found
