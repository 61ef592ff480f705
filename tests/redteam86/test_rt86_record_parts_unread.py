"""Red team 86 F1: red team 85 F3's fix counts what the history's call records say was landed (``CallRecords.landed``),
but reads each record file ONCE per process: "a record is written once: a new call, a new file". That is not so.
A call applied in parts (a background job, look by look: ``Applier._record``) rewrites its one record under the same
name with each part's paths added. A server that read the record after the first part never sees the second.

Server A (session 1): a background job whose first look lands ``note.txt`` (its record ``a00000000001.json`` is made)
and whose second look lands ``out/CACHEDIR.TAG`` into the user's own ``out/`` (the record is rewritten, same name).
Server B (session 2, running meanwhile, same history): any call between the two looks reads the record; after the
second look its ``rm -rf out`` (six untracked files of the user) is applied with no question.

Control: a server B started after both looks (it reads the record whole) asks.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mcp_server_guard.changes.what import What
from support.settling import applied_call, settled_call, transactions_over, untouched_copy

pytestmark = pytest.mark.anyio

TAG = "Signature: 8a477f597d28d172789f06886806bc55\n"


def _project(root: Path) -> None:
    (root / "out").mkdir(parents=True)
    for i in range(6):
        (root / "out" / f"results{i}.csv").write_text(f"the user's own results {i}\n")


async def _job_and_other_server(tmp_path: Path, b_reads_between: bool) -> str:
    root = tmp_path / "root"
    _project(root)
    history = tmp_path / "history"
    with transactions_over(root, tmp_path / "stateA", history) as (a, part_a):
        await applied_call(a, part_a, "a00000000001", {"note.txt": "look 1\n"})  # the job's first look
        with transactions_over(root, tmp_path / "stateB", history) as (b, part_b):
            if b_reads_between:
                await applied_call(b, part_b, "b00000000001", {"b.txt": "another session's call\n"})
            # the job's second look (same audit id: the record is rewritten with this part added)
            time.sleep(0.01)
            copy = untouched_copy(part_a, "look2")
            (copy / "u0" / "out").mkdir()
            (copy / "u0" / "out" / "CACHEDIR.TAG").write_text(TAG)
            roots = [r for r, _p in a.area.overlays()]
            done = await a.settle(
                copy.name, True, audit_id="a00000000001", started_ns=time.time_ns(), roots=roots, ask=None,
                hold=False, shown="x", what=What(),
            )  # fmt: skip
            assert done.transaction == "applied", done
            assert (root / "out" / "CACHEDIR.TAG").exists()
            return (await settled_call(b, part_b, "b00000000002", {}, removed=["out"])).transaction  # rm -rf out


async def test_control_a_server_that_reads_the_record_whole_asks(tmp_path: Path) -> None:
    transaction = await _job_and_other_server(tmp_path, b_reads_between=False)
    assert transaction != "applied"
    assert (tmp_path / "root" / "out" / "results0.csv").exists()


async def test_a_jobs_later_look_planting_a_cache_marker_still_counts_as_landed_for_a_running_server(
    tmp_path: Path,
) -> None:
    transaction = await _job_and_other_server(tmp_path, b_reads_between=True)
    assert (tmp_path / "root" / "out" / "results0.csv").exists(), (
        "six untracked files of the user deleted with no question",
        transaction,
    )
