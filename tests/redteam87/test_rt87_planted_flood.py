"""Red team 87: a flood of marker paths sized to fill the kept part pushes a planted marker out of the planted log.

``files.planted.Planted._compact`` (run when an append takes the log past 8 MiB) kept the NEWEST distinct paths
that are still there while they fit within 4 MiB, and dropped the rest (now: every marker still there, by
count). A command decides what is newest and exactly
how long each line is (a control character in a name takes six bytes of the log's JSON, a letter one): it makes 183
``CACHEDIR.TAG`` files of its own in a build directory (new trees: unasked, and not even logged), then rewrites them
three times (unasked: ~4 MiB logged each time), their lines sized so the newest fill the 4 MiB to the last byte.
The planted ``out/CACHEDIR.TAG`` -- still there, still the tool's -- no longer fits and falls out of the log; every
server of the user forgets it. The user's ``out/`` is a cache directory again and ``rm -rf out`` deletes their six
untracked files unasked.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_server_guard.changes.transactions import Transactions
from mcp_server_guard.files import planted
from support.settling import applied_call, settled_call, transactions_over

pytestmark = pytest.mark.anyio

TAG = "Signature: 8a477f597d28d172789f06886806bc55\n"
FLOOD = 183


def _line(path: str) -> int:
    return len(json.dumps(path, ensure_ascii=False).encode("utf-8", "backslashreplace"))


def _sized(root: Path, i: int, want: int) -> str:
    """A root-relative marker path whose log line is exactly ``want`` bytes."""
    head, tail = f"build/{i:05d}", "/out/CACHEDIR.TAG"  # (a marker the log keeps: in a directory named out)
    need = want - _line(f"{root}/{head}{tail}")
    comps: list[str] = []
    while need > 1 + 6 * 200 + 20:
        comps.append("\x01" * 200)
        need -= 1 + 6 * 200
    a = (need - 1) // 6 - 1
    b = need - 1 - 6 * a
    comps.append("\x01" * a + "d" * b)
    rel = head + "".join(f"/{c}" for c in comps) + tail
    assert _line(f"{root}/{rel}") == want, (_line(f"{root}/{rel}"), want)
    return rel


async def test_a_planted_marker_stays_planted_after_a_flood_of_sized_marker_paths(
    settled: tuple[Transactions, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(planted, "_MAX_BYTES", 256 << 10)  # (compacted at the flood's first call, as at 16 MiB)
    transactions, part = settled
    root = tmp_path / "root"
    (root / "out").mkdir(parents=True)
    for i in range(6):
        (root / "out" / f"results{i}.csv").write_text(f"the user's own results {i}\n")
    (root / "build").mkdir()
    await applied_call(transactions, part, "a00000000001", {"out/CACHEDIR.TAG": TAG})
    keep = 128 << 10  # (the budget the first compaction kept: a flood sized to fill it to the last byte)
    each = (keep - 1) // FLOOD - 1  # a line's bytes (+1: its newline)
    last = keep - (FLOOD - 1) * (each + 1) - 2  # the last to fit leaves one byte
    flood = [_sized(root, i, each) for i in range(FLOOD - 1)] + [_sized(root, FLOOD - 1, last)]
    await applied_call(transactions, part, "a00000000002", dict.fromkeys(flood, TAG))
    for n in range(3, 6):
        await applied_call(transactions, part, f"a0000000000{n}", dict.fromkeys(flood, TAG + "#" * n + "\n"))
    assert (root / "out" / "CACHEDIR.TAG").exists()
    # the next session's server (this one's memory of what it landed went with it: the log is all there is)
    with transactions_over(root, tmp_path / "state2", tmp_path / "history") as (two, part2):
        transaction = (await settled_call(two, part2, "a00000000006", {}, removed=["out"])).transaction  # rm -rf out
    assert (root / "out" / "results0.csv").exists(), ("six untracked files of the user deleted with no question",
                                                      transaction)  # fmt: skip
