"""docs/shell_exec.md "Judging": asked — "deleting or emptying a file git has no copy of (untracked ...)", "a file
replaced by a symlink, or by another name of a file the project had, counts as lost"; issue 42 claim 4: "Deletion
questions look at what was lost, not what stands at the path afterwards".

Everyday slip: ``mv -f template.txt notes.txt`` (or ``git mv -f``) where ``template.txt`` is committed and
``notes.txt`` holds untracked work. ``notes.txt``'s bytes are gone (the project's ``template.txt`` file now stands
there), exactly as with ``ln -f template.txt notes.txt``, which is asked. Observed: nothing asked — the rename reads as
"delete template.txt" (git has a copy: no question) + "modify notes.txt" (a rewrite: no question). With an untracked
source (``mv -f scratch.txt notes.txt``) the question names ``scratch.txt`` — which is not lost, it stands at
notes.txt — and not ``notes.txt``, which is.
Guessed cause: ``effects._moves`` pairs deletions only with *created* files, so a rename onto an existing name is a
deletion of the source plus a rewrite of the target; ``_replaced_by_another`` looks only at ``change.link`` (new hard
links), not at a target now holding another project file's bytes/inode."""

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
GIT = "git -c user.name=t -c user.email=t@t"


def _repo(copy: Copy) -> None:
    subprocess.run(["git", "init", "-q", str(copy.root)], check=True)
    (copy.root / "template.txt").write_text("template\n")
    subprocess.run(f"{GIT} add -A && {GIT} commit -qm init", shell=True, cwd=copy.root, check=True)
    (copy.root / "notes.txt").write_text("hours of untracked notes\n")
    (copy.root / "scratch.txt").write_text("junk\n")


def _asks(copy: Copy, script: str) -> list[str]:
    j = judge([copy.run(script)], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    return list(j.asks)


def test_control_hard_link_over_untracked_is_asked(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _repo(copy)
    asks = _asks(copy, "ln -f template.txt notes.txt")
    assert any("notes.txt" in a for a in asks), asks


@pytest.mark.parametrize("mv", ["mv -f", "git mv -f"])
def test_rename_of_a_committed_file_over_untracked_work(tmp_path: Path, mv: str) -> None:
    copy = Copy(tmp_path)
    _repo(copy)
    asks = _asks(copy, f"{mv} template.txt notes.txt")
    assert any("notes.txt" in a for a in asks), asks


def test_rename_of_an_untracked_file_over_untracked_work_names_what_was_lost(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _repo(copy)
    asks = _asks(copy, "mv -f scratch.txt notes.txt")
    assert any("notes.txt" in a for a in asks), asks
