"""Red team 79 F4: a branch was judged by its tip's tree only (``git_refs._written``), while the user's everyday
git writes its other commits' trees too: `git rebase main` of the branch (after main moved), `git cherry-pick
main..feature`, `git checkout feature~1`. A middle commit that adds a hook where ``core.hooksPath = .githooks`` says
(refused in the work tree), the tip that takes it out again: nothing was asked; the user's rebase writes the hook and
git runs it as the replayed commit is made (post-commit; verified with real git in /work/notes/rt79/exp/exp4.py).
The hook's text is harmless (``echo rt79``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
POLICY = load_policy()
HERE = Path(__file__).resolve().parent.parent / "support"  # (git_forge.py)
GIT = ["git", "-c", "user.name=u", "-c", "user.email=u@x", "-c", "commit.gpgsign=false"]


def _asks(tmp_path: Path, body: str) -> tuple[list[str], dict[tuple[str, str], str]]:
    copy = Copy(tmp_path)
    (copy.root / "a.txt").write_text("a\n")
    for args in (["init", "-q", "-b", "main"], ["config", "core.hooksPath", ".githooks"], ["add", "."],
                 ["commit", "-qm", "one"]):  # fmt: skip
        subprocess.run([*GIT, "-C", str(copy.root), *args], check=True, capture_output=True, timeout=30)
    script = tmp_path / "plant.py"
    script.write_text(f"import sys\nsys.path.insert(0, {str(HERE)!r})\nfrom git_forge import *\n{body}")
    changes = copy.run(f"{sys.executable} {script}")
    judgement = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    return judgement.asks, judgement.refused


HOOKED = """
hook = put_loose(b"blob", b"#!/bin/sh\\necho rt79\\n")
sub = put_loose(b"tree", b"100755 post-commit\\0" + bytes.fromhex(hook))
c1 = commit(tree_with({".githooks": ("40000", sub)}), git("rev-parse", "HEAD"), "c1")
"""
MIDDLE = (
    HOOKED
    + """
c2 = commit(git("rev-parse", "HEAD^{tree}"), c1, "c2")
git("update-ref", "refs/heads/feature", c2)
"""
)


def test_control_a_branch_whose_tip_adds_the_hook_is_asked(tmp_path: Path) -> None:
    asks, _ = _asks(tmp_path, HOOKED + 'git("update-ref", "refs/heads/feature", c1)\n')
    assert any(".githooks/post-commit" in a for a in asks), asks


def test_control_the_hook_written_in_the_work_tree_is_refused(tmp_path: Path) -> None:
    _, refused = _asks(tmp_path, 'import os\nos.mkdir(".githooks")\nopen(".githooks/post-commit", "w").write("x")\n')
    assert any(".githooks/post-commit" in path for _root, path in refused), refused


def test_attack_a_branch_whose_middle_commit_adds_the_hook_is_asked(tmp_path: Path) -> None:
    asks, _ = _asks(tmp_path, MIDDLE)
    assert any(".githooks" in a or "feature" in a for a in asks), ("git rebase main / checkout feature~1", asks)
