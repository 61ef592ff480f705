"""docs/shell_exec.md "Judging": asked — "putting a changed file back to the index's content (uncommitted work thrown
away: git reset --hard, git checkout -- f, git restore; git stash, which keeps the work, is not asked)".

Attack / everyday slip: ``git stash push -- a.txt && git checkout -- b.txt``: a.txt's work is kept in the stash, b.txt's
is thrown away. Observed: nothing asked. Expected: b.txt's discarded work is asked about (the stash keeps only a.txt).
Guessed cause: ``effects._stashes`` turns the whole check off as soon as any ``refs/stash`` changes anywhere in the
change set, whatever the stash holds (a stash in an unrelated repository does the same)."""

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
    root = copy.root
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "a.txt").write_text("a\n")
    (root / "b.txt").write_text("b\n")
    subprocess.run(f"{GIT} add -A && {GIT} commit -qm init", shell=True, cwd=root, check=True)
    (root / "a.txt").write_text("a\nwork on a\n")
    (root / "b.txt").write_text("b\nhours of work on b\n")


def test_discard_work_while_stashing_in_another_repository(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _repo(copy)
    script = (
        f"git init -q other && cd other && echo x > x && {GIT} add x && {GIT} commit -qm x && echo y > x "
        f"&& {GIT} stash -q && cd .. && git checkout -- b.txt"
    )
    j = judge([copy.run(script)], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    assert any("b.txt" in a for a in j.asks), j.asks


def test_discard_work_beside_a_stash_of_another_file_in_the_same_repository(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _repo(copy)
    j = judge([copy.run(f"{GIT} stash push -q -- a.txt && git checkout -- b.txt")], protection_for(POLICY),
              POLICY.effects, [str(copy.root)])  # fmt: skip
    assert any("b.txt" in a for a in j.asks) and not any("a.txt" in a for a in j.asks), j.asks


def test_a_stash_of_both_files_asks_nothing(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _repo(copy)
    j = judge([copy.run(f"{GIT} stash push -q -- a.txt b.txt")], protection_for(POLICY), POLICY.effects,
              [str(copy.root)])  # fmt: skip
    assert not any("discards" in a for a in j.asks), j.asks
