"""Red team 42m F3 ("the history's call records are inside history_max_bytes"): a background job has one record of
every look's changes, but each look was reckoned alone against the bound: a job making a few hundred files with long
names per look grew its record past `history_max_bytes`. What earlier parts wrote now counts with each new part."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from support.redteam import SX, call, disk_used, started

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")

BOUND = 131072


def test_attack_a_job_cannot_grow_its_record_past_the_history_bound_look_by_look(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "gen").mkdir()
    (workspace / ".t").mkdir()
    (workspace / ".t" / "many.py").write_text(
        "import os, time\nfor k in range(4):\n    for i in range(100):\n"
        "        open(os.path.join('gen', 'n%d_%05d_' % (k, i) + 'x' * 200), 'w').write('x')\n    time.sleep(2)\n"
    )
    policy = tmp_path / "p.toml"
    policy.write_text(f"[file_write]\nhistory_max_bytes = {BOUND}\n", encoding="utf-8")
    state = tmp_path / "state"
    raw = started(SX, workspace, state, "--policy", str(policy))
    try:
        start = {"command": "python3 .t/many.py", "yieldAfterSeconds": 1}
        look = call(raw, 1, "shell_exec", start)["structuredContent"]
        deadline = time.monotonic() + 60
        looks = [look]
        while looks[-1]["status"] == "running" and time.monotonic() < deadline:
            again = {"command": "", "jobId": look["jobId"], "yieldAfterSeconds": 2}
            looks.append(call(raw, 1 + len(looks), "shell_exec", again)["structuredContent"])
    finally:
        raw.close()
    assert looks[-1]["status"] == "exited", looks[-1]
    assert looks[0]["transaction"] == "applied", looks[0]  # the first part fits
    assert disk_used(state / "history") <= BOUND, [(x["transaction"], x["changes"]["summary"]) for x in looks]
