"""Red team 79 F5: what `git stash pop` writes comes from the stash commit's tree *and* its index and untracked-files
parents; ``git_refs._written`` adds the parents only for ``refs/stash`` itself. An older entry (stash@{1}), named only
in ``logs/refs/stash``, is judged by its tree alone: untracked files stashed with ``-u`` (here ``.envrc``, refused
in the work tree) come back at the user's second `git stash pop`, unasked. The .envrc's text is harmless."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
POLICY = load_policy()
GIT = "git -c user.name=u -c user.email=u@x -c commit.gpgsign=false"


def _asks(tmp_path: Path, script: str) -> list[str]:
    copy = Copy(tmp_path)
    (copy.root / "a.txt").write_text("a\n")
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-qm", "one"]):
        subprocess.run([*GIT.split(), "-C", str(copy.root), *args], check=True, capture_output=True, timeout=30)
    (tmp_path / "envrc").write_text("echo rt79\n")
    changes = copy.run(script.format(envrc=tmp_path / "envrc"))
    return judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)]).asks


ONE = "cp {envrc} .envrc && " + GIT + " stash push -u -q -m one"
TWO = ONE + " && echo b >> a.txt && " + GIT + " stash push -q -m two"


def test_control_the_top_stash_with_an_untracked_envrc_is_asked(tmp_path: Path) -> None:
    asks = _asks(tmp_path, ONE)
    assert any(".envrc" in a for a in asks), asks


def test_attack_an_older_stash_with_an_untracked_envrc_is_asked(tmp_path: Path) -> None:
    asks = _asks(tmp_path, TWO)
    assert any(".envrc" in a for a in asks), ("the second git stash pop writes .envrc", asks)
