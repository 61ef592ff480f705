"""Issue 42 (4): "deleting or emptying a file git has no copy of (untracked, or changed since the index)" is asked
(docs/shell_exec.md, "Judging"). In a linked work tree (``git worktree add``: ``.git`` is a file) or a submodule
checkout, deleting ONE untracked file asks nothing: ``git_index._repository`` opens ``.git`` only as a directory,
so the file counts as "in no repository" and only more than max_unbacked_files (3) of those are asked.
Observed: no question for the linked work tree (the control, the same in the main work tree, is asked)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

POLICY = load_policy()
pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")


def _git(*args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True, capture_output=True)


def _project(base: Path) -> Copy:
    copy = Copy(base)
    main, linked = copy.root / "main", copy.root / "feature"
    main.mkdir()
    _git("init", "-q", str(main))
    (main / "a.txt").write_text("committed\n")
    _git("-C", str(main), "add", "a.txt")
    _git("-C", str(main), "commit", "-qm", "one")
    _git("-C", str(main), "worktree", "add", "-q", str(linked))
    for tree in (main, linked):
        (tree / "notes.txt").write_text("an afternoon of work, never added\n")
    return copy


def test_false_calm_deleting_untracked_work_in_a_linked_worktree(tmp_path: Path) -> None:
    copy = _project(tmp_path / "control")
    control = judge([copy.run("rm main/notes.txt")], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    assert any("Git has no copy of main/notes.txt" in a for a in control.asks), control.asks

    copy = _project(tmp_path / "linked")
    judged = judge([copy.run("rm feature/notes.txt")], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    assert judged.asks, "deleting untracked work in a linked work tree was not asked"
