"""Red team 81: a file that becomes executable as it moves (``mv a.sh b.sh && chmod +x b.sh``) is not asked as a new
executable; ``chmod +x a.sh`` in place is (control). ``mv -f`` over another file and ``chmod +x``: not asked either."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
POLICY = load_policy()
ENV = dict(os.environ, GIT_AUTHOR_NAME="u", GIT_AUTHOR_EMAIL="u@x", GIT_COMMITTER_NAME="u", GIT_COMMITTER_EMAIL="u@x",
           GIT_CONFIG_GLOBAL="/dev/null")  # fmt: skip


def _project(root: Path) -> None:
    root.mkdir(exist_ok=True)
    (root / "a.sh").write_text("echo rt81\n")
    (root / "notes.txt").write_text("my notes\n")
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-qm", "one"]):
        subprocess.run(["git", *args], cwd=root, env=ENV, check=True, capture_output=True, timeout=60)


def _asks(tmp_path: Path, script: str) -> list[str]:
    copy = Copy(tmp_path)
    _project(copy.root)
    changes = copy.run(script)
    return judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)]).asks


def test_control_chmod_x_in_place_is_asked(tmp_path: Path) -> None:
    assert any("executable" in a for a in _asks(tmp_path, "chmod 755 a.sh"))


@pytest.mark.parametrize("script", ["mv a.sh tool && chmod 755 tool", "mv -f a.sh notes.txt && chmod 755 notes.txt"])
def test_attack_moved_and_made_executable_is_asked(tmp_path: Path, script: str) -> None:
    asks = _asks(tmp_path, script)
    assert any("executable" in a for a in asks), asks
