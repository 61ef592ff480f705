"""Red team 74 F5 (LOW): a directory re-moded and moved in one call is not named in the summary.

Issue 42 promise 1: "the summary names every path whose mode changed". ``chmod 777 d && mv d e`` (or ``chmod 700``,
``chmod 2755``) lands ``e/`` with another mode than ``d/`` had; the summary says only "move 2 files under d/ to e/".
The grant is asked (``It makes e (0777) writable by others``), a restriction is named nowhere — and the result's
summary, which is what the model and an agent CLI show, never says the mode changed.
``changes.summary:_remoded`` looks at a moved file's origin only (``change.kind != "dir"``).

Passes when the summary names the mode of a moved directory that differs from its origin's.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
POLICY = load_policy()


@pytest.mark.parametrize("mode", ["777", "700", "2755"])
def test_attack_moved_directory_mode_change_left_out_of_the_summary(tmp_path: Path, mode: str) -> None:
    copy = Copy(tmp_path)
    (copy.root / "d").mkdir()
    os.chmod(copy.root / "d", 0o755)
    (copy.root / "d" / "x").write_text("x\n")
    (copy.root / "d" / "y").write_text("y\n")
    old = os.umask(0o022)
    try:
        changes = copy.run(f"chmod {mode} d && mv d e")
        judged = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    finally:
        os.umask(old)
    assert "mode" in judged.summary and "e/" in judged.summary, (judged.summary, judged.asks)


def test_a_file_replaced_by_a_link_is_not_said_to_change_mode(tmp_path: Path) -> None:
    # Red team 81 F3: `ln -sf /nonexistent f` read "change the mode of f to 0777" (a link's own mode is no grant);
    # a real mode change beside it is still named.
    copy = Copy(tmp_path)
    for name in ("f1", "f2"):
        (copy.root / name).write_text("x\n")
        os.chmod(copy.root / name, 0o644)
    changes = copy.run("ln -sf /nonexistent f1 && chmod 600 f2")
    summary = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)]).summary
    assert "0777" not in summary and "f2" in summary, summary
