"""Issue 42 (4): deletion questions look at what was lost; "in a non-git project deleting more than a few
existing files is asked" (docs/shell_exec.md "Judging": "deleting or emptying more than max_unbacked_files (3)
files that no git repository keeps (a file replaced by a link counts as lost)"). Four files replaced by symlinks
are asked; four files replaced by HARD links (``ln -f a.txt b.txt``: b's bytes are gone just the same) are not.
Observed: no question; expected the same question as for symlinks."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import Judgement, judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
POLICY = load_policy()


def _judged(tmp_path: Path, script: str) -> Judgement:
    copy = Copy(tmp_path)
    for name in "abcde":
        (copy.root / f"{name}.txt").write_text(f"only copy of {name}\n")
    return judge([copy.run(script)], protection_for(POLICY), POLICY.effects, [str(copy.root)])


def test_attack_unbacked_files_replaced_by_hard_links_are_lost_unasked(tmp_path: Path) -> None:
    symlinks = _judged(tmp_path / "sym", "for f in b c d e; do ln -sf a.txt $f.txt; done").asks
    assert any("no git repository has a copy of" in a for a in symlinks), symlinks  # the control
    hard = _judged(tmp_path / "hard", "for f in b c d e; do ln -f a.txt $f.txt; done").asks
    assert any("no git repository has a copy of" in a for a in hard), hard
