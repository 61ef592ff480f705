"""Red team 87: a cache marker another server's apply has placed but not yet recorded makes the user's ``out/`` a
cache directory for a deletion judged and applied in that apply's breath.

``files.planted`` is appended when a call's RECORD is written (``CallRecords.write``, at the apply's end); a long
apply breathes (``treelock.breathe``) between its steps and lets other writers in. Server A's call places
``out/CACHEDIR.TAG`` in the user's ``out/`` (six untracked results files), then more files; after the marker step
it breathes. Server B's ``rm -rf out`` is judged in that gap: the marker stands in the real tree, no log and no
memory of B's says a tool planted it -> a cache directory -> applied unasked. A's re-check judges only its own steps
left. (Red team 86's held probe of a ``.pth`` module in a breath held because A's re-check asked about its module;
here what is lost is B's deletion, which no re-check of A's looks at.)
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import anyio
import pytest

from mcp_server_guard.changes import apply as apply_module
from mcp_server_guard.changes.transactions import Transactions
from mcp_server_guard.changes.what import What
from mcp_server_guard.files import treelock
from support.settling import transactions_over, untouched_copy

pytestmark = pytest.mark.anyio

TAG = "Signature: 8a477f597d28d172789f06886806bc55\n"


async def test_a_deletion_judged_in_the_breath_of_an_apply_that_placed_a_marker_is_asked(
    settled: tuple[Transactions, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    (root / "out").mkdir(parents=True)
    for i in range(6):
        (root / "out" / f"results{i}.csv").write_text(f"the user's own results {i}\n")
    marker = root / "out" / "CACHEDIR.TAG"
    time.sleep(0.02)
    started = time.time_ns()
    copy = untouched_copy(part, "c1")
    files = {"out/CACHEDIR.TAG": TAG} | {f"zfill{i}.txt": "new\n" for i in range(6)}  # (steps after the marker's)
    for path, content in files.items():
        (copy / "u0" / path).parent.mkdir(parents=True, exist_ok=True)
        (copy / "u0" / path).write_text(content)

    b_results: list[str] = []
    seen: list[bool] = []

    with transactions_over(root, tmp_path / "stateB", tmp_path / "history") as (b, part_b):
        b_copy = untouched_copy(part_b, "b1")
        os.mknod(b_copy / "u0" / "out", 0o600 | 0o020000, os.makedev(0, 0))  # overlayfs whiteout: rm -rf out
        b_started: list[int] = []

        async def b_call() -> None:
            done = await b.settle(
                b_copy.name, True, audit_id="b00000000001", started_ns=b_started[0], roots=[str(root)], ask=None,
                hold=False, shown="rm -rf out", what=What(),
            )  # fmt: skip
            b_results.append(done.transaction)

        real_breathe = treelock.breathe

        def breathing(every_s: float = treelock.BREATHE_S) -> bool:
            if seen or not marker.exists():
                return real_breathe(every_s)
            seen.append(True)
            b_started.append(time.time_ns())  # B's command ran while A's apply went on (after the marker landed)
            thread = threading.Thread(target=anyio.run, args=(b_call,))
            thread.start()  # server B's call ends now: judged (no lock), then waits for the tree lock
            threading.Event().wait(3)
            others = real_breathe(0)  # A lets go for a moment: B comes in
            thread.join(30)
            return others

        monkeypatch.setattr(apply_module, "breathe", breathing)
        done = await transactions.settle(
            copy.name, True, audit_id="a00000000001", started_ns=started, roots=[str(root)], ask=None, hold=False,
            shown="x", what=What(),
        )  # fmt: skip
    print("A:", done.transaction, done.reason, "B:", b_results)
    assert seen, "no breath came after the marker step"
    assert (root / "out" / "results0.csv").exists(), (
        "six untracked files of the user deleted with no question",
        f"A {done.transaction}",
        f"B {b_results}",
    )
