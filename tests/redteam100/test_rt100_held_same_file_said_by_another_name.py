"""Red team 100 F5: the log compares paths as strings. Another server whose root reaches the same directory by
another name on the same file system (a bind mount of the project: the same device, so the same tree lock; a
casefolded directory: ``NOTES.md`` is ``notes.md``) says the file it wrote by that name. The judgement of a command
that rewrote the same file takes the write for unrelated and stands; its apply then throws the other agent's
write away with no question (a judgement made after the write finds the file changed since the command started: a
conflict). Simulated here with the other writer's path said through a symlinked alias of the root (what
``/proc/self/fd`` gives for a directory opened through a bind mount).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mcp_server_guard.changes.effects import judge as effects_judge
from mcp_server_guard.changes.transactions import Transactions
from mcp_server_guard.files.treelock import tree_lock
from support.settling import settle, untouched_copy

pytestmark = pytest.mark.anyio


async def test_attack_a_write_said_by_another_name_of_the_same_file_is_lost_unasked(
    settled: tuple[Transactions, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    alias = tmp_path / "mounted-elsewhere"  # (stands in for a bind mount of root: same device, another name)
    os.symlink(root, alias)
    (root / "notes.md").write_text("old\n")
    started_ns = time.time_ns()
    time.sleep(0.01)
    copy = untouched_copy(part, "c1")
    (copy / "u0" / "notes.md").write_text("the command's\n")
    rounds: list[int] = []

    def other_agent() -> None:
        said = [str(alias / "notes.md")]
        with tree_lock([root.stat().st_dev], wait_s=2, wrote=lambda: said):
            (alias / "notes.md").write_text("the other agent's work\n")

    def judging(*args: Any, **kwargs: Any) -> Any:
        judgement = effects_judge(*args, **kwargs)
        rounds.append(1)
        if len(rounds) == 1:
            writer = threading.Thread(target=other_agent)
            writer.start()
            writer.join(10)
        return judgement

    monkeypatch.setattr("mcp_server_guard.changes.effects.judge", judging)  # (looked up at each judgement)
    result = await settle(transactions, copy.name, started_ns)
    assert (root / "notes.md").read_text() == "the other agent's work\n", (result, rounds)
