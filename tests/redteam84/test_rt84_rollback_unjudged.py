"""Red team 84 F1: the rollback of an apply stopped by a breath's re-check (rt83 F3's fix) puts back, unjudged,
what the apply's first steps took away -- into a tree another writer changed in the gap.

Tree: ``shaped/config`` holds ``core.fsmonitor`` in a PLAIN directory (nothing to judge: rt83 F4's step 1 was
applied unasked). Call A (long apply) takes the key out (``shaped/config`` -> ``[core]``) and writes a second
config (``shaped/config.worktree``). After A's first step, A breathes; server B lands ``shaped/{HEAD,objects,refs}``
and ``w/.git`` naming ``shaped`` (judged against ``[core]``: harmless, applied). A's re-check finds its step left
(config.worktree) rewritten now -> A stops and goes back whole: the rollback puts ``shaped/config`` with
``core.fsmonitor`` back into what is now a git dir. The user's ``git status`` in ``w`` runs the program.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from mcp_server_guard.changes import apply as apply_module
from mcp_server_guard.changes.transactions import Transactions
from mcp_server_guard.changes.what import What
from mcp_server_guard.files import treelock
from support.settling import breath_letting_in, git_dir_made, untouched_copy

pytestmark = pytest.mark.anyio


async def test_the_rollback_of_a_stopped_apply_never_puts_a_config_back_into_a_git_dir_made_in_its_breath(
    settled: tuple[Transactions, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    shaped, work = root / "shaped", root / "w"
    shaped.mkdir()
    work.mkdir()
    (work / "a.txt").write_text("a\n")
    marker = tmp_path / "ran-outside-the-box"
    payload = f"[core]\n\tfsmonitor = touch {marker}\n"
    (shaped / "config").write_text(payload)  # a plain directory: harmless where it is
    time.sleep(0.02)
    started = time.time_ns()
    copy = untouched_copy(part, "c1")
    (copy / "u0" / "shaped").mkdir()
    (copy / "u0" / "shaped" / "config").write_text("[core]\n")  # A takes the key out ...
    (copy / "u0" / "shaped" / "config.worktree").write_text(payload)  # ... and its later step is a config too
    seen: list[str] = []

    real_breathe = treelock.breathe

    def breathing(every_s: float = treelock.BREATHE_S) -> bool:
        if seen or (shaped / "config").read_text() != "[core]\n":
            return real_breathe(every_s)
        seen.append("gap after the config step")
        return breath_letting_in(lambda: git_dir_made(shaped, work), real_breathe)

    monkeypatch.setattr(apply_module, "breathe", breathing)
    roots = [str(root)]
    done = await transactions.settle(
        copy.name, True, audit_id="a1", started_ns=started, roots=roots, ask=None, hold=False, shown="x", what=What()
    )
    assert seen, "the breath never came after the config step"
    assert (shaped / "HEAD").exists() and (work / ".git").exists()  # B's git dir stays
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null")
    subprocess.run(["git", "status"], cwd=work, env=env, capture_output=True, timeout=60, check=False)
    print("transaction:", done.transaction, done.reason)
    print("shaped/config now:", (shaped / "config").read_text())
    assert not marker.exists(), f"the user's git status ran the rollback's config ({done.transaction}: {done.reason})"
    assert done.transaction == "failed" and "shaped/config" in done.reason and "not put back" in done.reason
    assert (shaped / "config").read_text() == "[core]\n"  # left as the apply left it; its earlier version kept
