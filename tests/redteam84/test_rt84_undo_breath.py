"""Red team 84 F2: a long undo breathes too (``Applier._steps`` -> ``treelock.breathe``), but nothing judges the
undo's steps left after another writer came in: ``Applier.stale`` is ``not_stale`` outside ``Transactions._rechecked``,
and ``undo_judged.Judged`` runs once, before the first step.

Call 1 writes ``shaped/config`` with ``core.fsmonitor`` into a plain directory (applied unasked); call 2 rewrites
``z/f*.txt`` (undone first: last first) and takes the key out of the config. ``mcp-guard undo`` of call 2 is
judged against the plain directory:
fine. During the undo's breath, server B makes ``shaped/`` a git dir and ``w/.git`` naming it (judged against the
harmless ``[core]``: applied). The undo's later step puts the fsmonitor config back into the git dir: ``git status``
in ``w`` runs it.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from mcp_server_guard.changes import apply as apply_module
from mcp_server_guard.changes.transactions import Transactions
from mcp_server_guard.changes.undo_judged import Judged, UndoRefused
from mcp_server_guard.files import treelock
from mcp_server_guard.protected import protection_for
from support.settling import POLICY, applied_call, breath_letting_in, git_dir_made

pytestmark = pytest.mark.anyio
IDS = ("000000000001", "000000000002")


async def test_an_undo_that_breathes_never_puts_a_config_back_into_a_git_dir_made_in_the_gap(
    settled: tuple[Transactions, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transactions, part = settled
    root, marker = tmp_path / "root", tmp_path / "ran-outside-the-box"
    shaped, work = root / "shaped", root / "w"
    shaped.mkdir()
    work.mkdir()
    (work / "a.txt").write_text("a\n")
    (root / "z").mkdir()
    for i in range(5):
        (root / "z" / f"f{i}.txt").write_text("old\n")
    await applied_call(transactions, part, IDS[0], {"shaped/config": f"[core]\n\tfsmonitor = touch {marker}\n"})
    time.sleep(0.02)
    await applied_call(
        transactions, part, IDS[1], {"shaped/config": "[core]\n", **{f"z/f{i}.txt": "new\n" for i in range(5)}}
    )
    seen: list[str] = []

    real_breathe = treelock.breathe

    def breathing(every_s: float = treelock.BREATHE_S) -> bool:
        if seen or (shaped / "config").read_text() != "[core]\n":
            return real_breathe(every_s)  # (only a gap before the config step is put back)
        seen.append("gap before the config is put back")
        return breath_letting_in(lambda: git_dir_made(shaped, work), real_breathe)

    monkeypatch.setattr(apply_module, "breathe", breathing)
    roots = [str(root)]
    judged = Judged(transactions.applier.history, protection_for(POLICY), POLICY.effects, roots)
    outcome = None
    try:
        outcome = transactions.applier.undo(IDS[1], "0000000000aa", roots, judged=judged)
    except (UndoRefused, apply_module.NotApplied) as exc:
        print("undo stopped:", exc)
    assert seen, "no breath came before the config step"
    assert (shaped / "HEAD").exists() and (work / ".git").exists()
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null")
    subprocess.run(["git", "status"], cwd=work, env=env, capture_output=True, timeout=60, check=False)
    print("undo outcome:", outcome)
    assert not marker.exists(), "the undo put the fsmonitor config back into the git dir made in its breath"
