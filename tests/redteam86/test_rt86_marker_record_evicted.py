"""Red team 86 F3: red team 85 F3's fix counts a cache marker as planted by a tool only while the history holds the
record of the call that landed it (``CallRecords.landed``). Records are evicted with their call, oldest first, to keep
the history within ``history_max_bytes`` -- and a command can make the history evict: rewriting a large file in a
build directory (unasked) keeps its pre-image. Once the planting call's record is gone, the marker is the user's
again and ``out/`` a cache directory.

Session 1: ``out/CACHEDIR.TAG`` planted in the user's ``out/`` (unasked); then a few rewrites of ``build/blob.bin``
(unasked) push the history over its bound (kept small here; 256 MiB by default: a few rewrites of a large build
artefact). Session 2 (a new server, same history): ``rm -rf out`` with the user's six untracked files -- no question.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_server_guard.changes.area import CopyArea
from mcp_server_guard.changes.transactions import Transactions
from mcp_server_guard.files.history import HistoryStore
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.settling import applied_call, settled_call

pytestmark = pytest.mark.anyio

POLICY = load_policy()
TAG = "Signature: 8a477f597d28d172789f06886806bc55\n"
BOUND = 200_000


@contextlib.contextmanager
def _server(root: Path, state: Path, history: Path) -> Iterator[tuple[Transactions, Path]]:
    area = CopyArea([str(root)], state)
    transactions = Transactions(area, HistoryStore(history, BOUND), protection_for(POLICY), POLICY.effects)
    try:
        yield transactions, Path(area.overlays()[0][1])
    finally:
        transactions.close()
        area.close()


async def test_a_planted_cache_marker_stays_planted_when_the_history_evicts_its_record(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "out").mkdir(parents=True)
    for i in range(6):
        (root / "out" / f"results{i}.csv").write_text(f"the user's own results {i}\n")
    (root / "build").mkdir()
    (root / "build" / "blob.txt").write_text("0" * 60_000)
    history = tmp_path / "history"
    with _server(root, tmp_path / "state1", history) as (one, part):
        await applied_call(one, part, "a00000000001", {"out/CACHEDIR.TAG": TAG})
        for i in range(2, 6):
            time.sleep(0.01)
            await applied_call(one, part, f"a0000000000{i}", {"build/blob.txt": str(i) * 60_000})
    assert (root / "out" / "CACHEDIR.TAG").exists()
    evicted = not (history / "calls" / "a00000000001.json").exists()
    with _server(root, tmp_path / "state2", history) as (two, part2):
        transaction = (await settled_call(two, part2, "b00000000001", {}, removed=["out"])).transaction  # rm -rf out
    assert (root / "out" / "results0.csv").exists(), (
        "six untracked files of the user deleted with no question",
        transaction,
        f"record evicted: {evicted}",
    )
