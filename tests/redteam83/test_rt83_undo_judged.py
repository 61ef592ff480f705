"""Red team 83 F4: an undo is a writer, and what it puts back lands in a tree other calls changed since.

Call 1 writes ``shaped/config`` with ``core.fsmonitor`` into a plain directory (nothing to judge), call 2 takes the
key out, call 3 makes ``shaped/`` a git dir with a ``w/.git`` file naming it (judged with the harmless config:
applied). ``mcp-guard undo`` of call 2 put the fsmonitor config back into the git dir unjudged, and the user's next
``git status`` in ``w`` ran the program. What an undo puts back is now judged as a write of it now would be
(``changes.undo_judged``): the undo is refused and changes nothing.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.transactions import Transactions
from mcp_server_guard.changes.undo_judged import Judged, UndoRefused
from mcp_server_guard.protected import protection_for
from support import console_script
from support.settling import POLICY, applied_call

pytestmark = pytest.mark.anyio
IDS = ("000000000001", "000000000002", "000000000003")


async def _three_calls(transactions: Transactions, part: Path, root: Path, marker: Path) -> None:
    (root / "shaped").mkdir()
    (root / "w").mkdir()
    (root / "w" / "a.txt").write_text("a\n")
    await applied_call(transactions, part, IDS[0], {"shaped/config": f"[core]\n\tfsmonitor = touch {marker}\n"})
    await applied_call(transactions, part, IDS[1], {"shaped/config": "[core]\n"})
    await applied_call(transactions, part, IDS[2], {"shaped/HEAD": "ref: refs/heads/main\n", "shaped/objects/.keep": "",
                                             "shaped/refs/.keep": "", "w/.git": "gitdir: ../shaped\n"})  # fmt: skip
    assert (root / "shaped" / "HEAD").is_file() and (root / "w" / ".git").is_file()


def _git_status_runs_nothing(work: Path, marker: Path) -> None:
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null")
    subprocess.run(["git", "status"], cwd=work, env=env, capture_output=True, timeout=60, check=False)
    assert not marker.exists()


async def test_attack_an_undo_never_puts_a_config_back_into_what_became_a_git_dir(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    transactions, part = settled
    root, marker = tmp_path / "root", tmp_path / "ran-outside-the-box"
    await _three_calls(transactions, part, root, marker)
    roots = [str(root)]
    judged = Judged(transactions.applier.history, protection_for(POLICY), POLICY.effects, roots)
    with pytest.raises(UndoRefused, match="shaped/config"):
        transactions.applier.undo(IDS[1], "0000000000aa", roots, judged=judged)
    assert (root / "shaped" / "config").read_text() == "[core]\n"  # nothing was undone
    _git_status_runs_nothing(root / "w", marker)


async def test_mcp_guard_undo_refuses_what_no_tool_may_write_where_it_lands_now(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    transactions, part = settled
    root, marker = tmp_path / "root", tmp_path / "ran-outside-the-box"
    await _three_calls(transactions, part, root, marker)
    history = str(transactions.applier.history.directory)
    undo = [console_script("mcp-guard"), "undo", "--history-dir", history]
    refused = subprocess.run([*undo, IDS[1]], capture_output=True, text=True, timeout=120, check=False)
    assert refused.returncode == 2 and "UNDO_REFUSED" in refused.stderr and "shaped/config" in refused.stderr
    assert (root / "shaped" / "config").read_text() == "[core]\n"
    _git_status_runs_nothing(root / "w", marker)
    # An undo whose files are judged harmless where they land still goes: the git dir call itself.
    undone = subprocess.run([*undo, IDS[2]], capture_output=True, text=True, timeout=120, check=False)
    assert undone.returncode == 0, undone.stderr
    assert not (root / "w" / ".git").exists() and not (root / "shaped" / "HEAD").exists()
