"""What git keeps is judged as the call leaves the index too (red team 152 F1): work only staged, rewritten and
re-staged or removed with ``git rm -f`` by one call, is an only copy (its deletion asked, its pre-image never evicted
unasked); a committed file removed or a staged one committed stays git's. On real upper layers."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import Judgement, judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
POLICY = load_policy()
ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def _judged(tmp_path: Path, script: str) -> Judgement:
    copy = Copy(tmp_path)
    root = copy.root

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-C", str(root), *args], check=True, capture_output=True, env={**ENV, "PATH": "/usr/bin:/bin"}
        )

    git("init", "-q")
    (root / "committed.md").write_text("committed work\n")
    git("add", "committed.md")
    git("commit", "-q", "-m", "one")
    (root / "staged.md").write_text("staged work, never committed\n")
    git("add", "staged.md")
    names = " ".join(f"{k}={v}" for k, v in ENV.items())
    return judge([copy.run(f"export {names}; {script}")], protection_for(POLICY), POLICY.effects, [str(root)])


def _only(judgement: Judgement) -> list[str]:
    return [p.rsplit("/", 1)[-1] for p in judgement.only_copies]


def test_attack_staged_work_rewritten_and_restaged_is_an_only_copy(tmp_path: Path) -> None:
    judgement = _judged(tmp_path, "echo model > staged.md && git add staged.md")
    assert "staged.md" in _only(judgement), judgement.only_copies


def test_attack_staged_work_removed_with_git_rm_is_asked(tmp_path: Path) -> None:
    judgement = _judged(tmp_path, "git rm -q -f staged.md")
    assert any("Git has no copy of staged.md" in a for a in judgement.asks), judgement.asks


def test_a_committed_file_removed_with_git_rm_is_not_asked(tmp_path: Path) -> None:
    judgement = _judged(tmp_path, "git rm -q committed.md")
    assert not any("Git has no copy" in a for a in judgement.asks), judgement.asks
    assert "committed.md" not in _only(judgement)


def test_staged_work_committed_then_rewritten_stays_gits(tmp_path: Path) -> None:
    judgement = _judged(tmp_path, "git commit -q -m two && echo more >> staged.md && git add staged.md")
    assert "staged.md" not in _only(judgement), judgement.only_copies


def test_staged_work_left_in_the_index_stays_gits(tmp_path: Path) -> None:
    judgement = _judged(tmp_path, "echo model > staged.md")
    assert "staged.md" not in _only(judgement), judgement.only_copies
