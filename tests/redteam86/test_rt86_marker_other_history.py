"""Red team 86 F4 (variant of F1/F3): what counts as landed by a tool is read from THIS server's history store only
(``Transactions._judged``: ``self.applier.history.calls.landed()``). Every server of the user is listed in the
registry with its state directories (docs/security.md), and the tree lock was moved there so that servers with
different state directories see each other (red team 83 F1) -- but a server started with another state directory
(another ``XDG_STATE_HOME``: another agent CLI, a project-local config) never reads the other's records.

Server A (history H1): ``out/CACHEDIR.TAG`` planted in the user's ``out/``. Server B (history H2, same roots):
``rm -rf out`` with the user's six untracked files -- no question.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from mcp_server_guard.changes.transactions import Transactions
from mcp_server_guard.changes.what import What
from support.settling import applied_call, transactions_over, untouched_copy

pytestmark = pytest.mark.anyio

TAG = "Signature: 8a477f597d28d172789f06886806bc55\n"


async def _remove_out(transactions: Transactions, part: Path, audit_id: str) -> str:
    started = time.time_ns()
    copy = untouched_copy(part, f"rm{audit_id}")
    os.mknod(copy / "u0" / "out", 0o600 | 0o020000, os.makedev(0, 0))  # overlayfs whiteout: rm -rf out
    roots = [root for root, _part in transactions.area.overlays()]
    done = await transactions.settle(
        copy.name, True, audit_id=audit_id, started_ns=started, roots=roots, ask=None, hold=False, shown="rm -rf out",
        what=What(),
    )  # fmt: skip
    return done.transaction


async def test_a_marker_planted_by_a_server_of_another_history_still_counts_as_planted(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "out").mkdir(parents=True)
    for i in range(6):
        (root / "out" / f"results{i}.csv").write_text(f"the user's own results {i}\n")
    with transactions_over(root, tmp_path / "stateA", tmp_path / "historyA") as (a, part_a):
        await applied_call(a, part_a, "a00000000001", {"out/CACHEDIR.TAG": TAG})
    with transactions_over(root, tmp_path / "stateB", tmp_path / "historyB") as (b, part_b):
        transaction = await _remove_out(b, part_b, "b00000000001")
    assert (root / "out" / "results0.csv").exists(), ("six untracked files deleted with no question", transaction)
