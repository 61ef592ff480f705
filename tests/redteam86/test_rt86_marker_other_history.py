"""Red team 86 F4 (variant of F1/F3): what counts as landed by a tool is read from THIS server's history store only
(``Transactions._judged``: ``self.applier.history.calls.landed()``). Every server of the user is listed in the
registry with its state directories (docs/security.md), and the tree lock was moved there so that servers with
different state directories see each other (red team 83 F1) -- but a server started with another state directory
(another ``XDG_STATE_HOME``: another agent CLI, a project-local config) never reads the other's records.

Server A (history H1): ``out/CACHEDIR.TAG`` planted in the user's ``out/``. Server B (history H2, same roots):
``rm -rf out`` with the user's six untracked files -- no question.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support.settling import applied_call, settled_call, transactions_over

pytestmark = pytest.mark.anyio

TAG = "Signature: 8a477f597d28d172789f06886806bc55\n"


async def test_a_marker_planted_by_a_server_of_another_history_still_counts_as_planted(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "out").mkdir(parents=True)
    for i in range(6):
        (root / "out" / f"results{i}.csv").write_text(f"the user's own results {i}\n")
    with transactions_over(root, tmp_path / "stateA", tmp_path / "historyA") as (a, part_a):
        await applied_call(a, part_a, "a00000000001", {"out/CACHEDIR.TAG": TAG})
    with transactions_over(root, tmp_path / "stateB", tmp_path / "historyB") as (b, part_b):
        transaction = (await settled_call(b, part_b, "b00000000001", {}, removed=["out"])).transaction  # rm -rf out
    assert (root / "out" / "results0.csv").exists(), ("six untracked files deleted with no question", transaction)
