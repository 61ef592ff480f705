"""Red team 80: the index's unmerged entries. ``git_index.index_entries`` keeps one entry per path (the last: stage
3), so ``git_refs._staged`` judges "theirs" only; the user's ``git checkout --ours -- <path>`` (everyday in a
conflict) writes stage 2. Here stage 2 is a new executable (asked when written now), stage 3 the same bytes not
executable. A shell script that prints ``rt80``."""

from __future__ import annotations

import os
import shutil
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
    (root / "a.txt").write_text("a\n")
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-qm", "one"]):
        subprocess.run(["git", *args], cwd=root, env=ENV, check=True, capture_output=True, timeout=60)


_BLOB = "b=$(printf '#!/bin/sh\\necho rt80\\n' | git hash-object -w --stdin) && "
CONFLICT = _BLOB + ("printf '100755 %s 2\\trun.sh\\n100644 %s 3\\trun.sh\\n' $b $b | git update-index --index-info")
CONTROL = _BLOB + "printf '100755 %s 0\\trun.sh\\n' $b | git update-index --index-info"


def _asks(tmp_path: Path, script: str) -> list[str]:
    copy = Copy(tmp_path)
    _project(copy.root)
    changes = copy.run(script)
    return judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)]).asks


def test_control_a_staged_new_executable_is_asked(tmp_path: Path) -> None:
    asks = _asks(tmp_path, CONTROL)
    assert any("run.sh" in a for a in asks), asks


def test_attack_ours_of_a_conflict_is_judged(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    _project(plain)
    subprocess.run(["sh", "-ec", CONFLICT], cwd=plain, env=ENV, check=True, capture_output=True, timeout=60)
    subprocess.run(["git", "checkout", "--ours", "--", "run.sh"], cwd=plain, env=ENV, check=True, capture_output=True,
                   timeout=60)  # fmt: skip
    assert os.stat(plain / "run.sh").st_mode & 0o111  # git wrote stage 2: executable
    shutil.rmtree(plain)
    asks = _asks(tmp_path, CONFLICT)
    assert any("run.sh" in a for a in asks), ("git checkout --ours -- run.sh writes a new executable", asks)
