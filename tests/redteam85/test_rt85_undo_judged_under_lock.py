"""Red team 85 F4 (bound): ``Applier.undo`` judges what it puts back (``undo_judged.Judged``: every file laid out in
a scratch directory and ``effects.judge``d, up to 200,000 paths and 256 MiB read) while HOLDING the tree lock, and
so do its re-checks after each breath (``Judged.left``) and a dead run's ``Rechecks.stale`` at the next start. The
judgement of a large change set takes many seconds (red team 82: 13 s for 190,000 files) -- the very thing
``Transactions._judged`` was changed not to do under the lock (red team 82 F2): every other server's writer waits
for it (file_write: FILE_BUSY after 10 s; shell_exec: TreeBusy past 30 s).

Now an undo is judged without the tree lock, noting how often the lock was taken, and judged again after if another
writer took it meanwhile (three such rounds, then under the lock). Here another server's writer tries the tree lock
(0.5 s wait, as a short write would) while the undo's first judgement runs: it gets in, and the undo, judged again,
goes on.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mcp_server_guard.changes import effects
from mcp_server_guard.changes.effects import judge as effects_judge
from mcp_server_guard.changes.transactions import Transactions
from mcp_server_guard.changes.undo_judged import Judged
from mcp_server_guard.files.treelock import TreeBusy, tree_lock
from mcp_server_guard.protected import protection_for
from support.settling import POLICY, applied_call

pytestmark = pytest.mark.anyio
IDS = ("000000000001", "000000000002")


async def test_an_undos_judgement_does_not_keep_other_servers_writers_waiting(
    settled: tuple[Transactions, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    (root / "z").mkdir(parents=True)
    for i in range(5):
        (root / "z" / f"f{i}.txt").write_text("old\n")
    time.sleep(0.02)
    await applied_call(transactions, part, IDS[0], {f"z/f{i}.txt": "new\n" for i in range(5)})
    waits: list[str] = []
    judgements: list[int] = []
    real_judge = effects_judge

    def other_server_writes() -> None:
        try:
            with tree_lock([root.stat().st_dev], wait_s=0.5):
                waits.append("got in")
        except TreeBusy:
            waits.append("kept waiting by the undo's judgement")

    def judging(*args: Any, **kwargs: Any) -> Any:  # a judgement that takes a while, a writer trying meanwhile
        if not waits:
            thread = threading.Thread(target=other_server_writes)
            thread.start()
            thread.join(10)
        judgements.append(1)
        return real_judge(*args, **kwargs)

    monkeypatch.setattr(effects, "judge", judging)
    roots = [str(root)]
    judged = Judged(transactions.applier.history, protection_for(POLICY), POLICY.effects, roots)
    transactions.applier.undo(IDS[0], "0000000000aa", roots, judged=judged)
    assert waits == ["got in"], waits
    assert len(judgements) == 2  # judged again: the writer took the lock meanwhile
    assert all((root / "z" / f"f{i}.txt").read_text() == "old\n" for i in range(5))  # undone
