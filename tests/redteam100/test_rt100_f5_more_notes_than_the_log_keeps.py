"""Red team 100 F5: the bound of issue 42 item 7 fails exactly where it is needed. The log keeps LOG_KEEP (32)
takings. A judgement long enough to need item 7 (190,000 files: many seconds) sees far more than 32 file_writes of
an agent writing its notes at file_write's pace (milliseconds each). Its count then moved past what the log covers,
so it is "anything": judged again, round after round, and after ROUNDS it runs under the tree lock (the notes
writer waits for it: FILE_BUSY past 10 s for a huge one), as before the commit.

Shown in-process: the other agent writes ``notes.md`` (plain, far) 40 times while each judgement runs, through the
tree lock exactly as file_write does.

Answered: older runs of takings are merged, not forgotten (``files.treelock._merged``): an agent rewriting its
notes a thousand times costs one entry.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from mcp_server_guard.changes.effects import judge as effects_judge
from mcp_server_guard.changes.transactions import Transactions
from mcp_server_guard.files import treelock
from mcp_server_guard.files.treelock import TreeBusy, tree_lock
from support.settling import settle, untouched_copy

pytestmark = pytest.mark.anyio


async def test_attack_an_agent_writing_notes_fast_makes_a_long_build_judgement_run_under_the_lock(
    settled: tuple[Transactions, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    copy = untouched_copy(part, "c1")
    (copy / "u0" / "build").mkdir()
    (copy / "u0" / "build" / "a.o").write_bytes(b"\x7fELF")
    rounds: list[int] = []
    busy: list[int] = []
    said = [str(root / "notes.md")]

    def other_agent() -> None:  # (file_write's pace: one write every few milliseconds, for the judgement's length)
        for i in range(treelock.LOG_KEEP * 4 + 8):
            try:
                with tree_lock([root.stat().st_dev], wait_s=2, wrote=lambda: said):
                    (root / "notes.md").write_text(f"{i}\n")
            except TreeBusy:
                busy.append(i)  # (file_write: FILE_BUSY)
                return

    def judging(*args: Any, **kwargs: Any) -> Any:
        rounds.append(1)
        writer = threading.Thread(target=other_agent)
        writer.start()
        writer.join(30)
        return effects_judge(*args, **kwargs)

    monkeypatch.setattr("mcp_server_guard.changes.effects.judge", judging)  # (looked up at each judgement)
    assert await settle(transactions, copy.name) == "applied"
    assert len(rounds) == 1 and not busy, (rounds, busy)  # judged once; the notes writer never waited past its bound
