"""Issue 40, red team f, item 4 ("undo is exact"; docs/shell_exec.md: every result that applied something names
``mcp-guard undo <auditId>``, which "exits 0 only when every path is back exactly"): a background job applies its
changes look by look under one audit id, and each apply rewrote that id's record. The undo every look named put
back only the last look's changes and said success; the earlier looks' changes stayed, with no id left to undo
them. A call applied in parts now keeps one record of every part."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from support.fidelity import snapshot
from support.redteam import SX, call, mcp_guard, started

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")


def test_the_undo_a_job_names_puts_back_what_every_look_applied(workspace: Path, tmp_path: Path) -> None:
    (workspace / "a.txt").write_text("a\n", encoding="utf-8")
    (workspace / "b.txt").write_text("b\n", encoding="utf-8")
    state = tmp_path / "state"
    before = snapshot(workspace)
    command = "echo x >> a.txt && echo n > n; sleep 2.5; echo y >> b.txt && echo m > m"
    raw = started(SX, workspace, state)
    try:
        first = call(raw, 1, "shell_exec", {"command": command, "yieldAfterSeconds": 1}, timeout=60)
        looks = [first["structuredContent"]]
        job = looks[0]["jobId"]
        deadline = time.monotonic() + 60
        while looks[-1].get("status") == "running" and time.monotonic() < deadline:
            look = call(raw, 1 + len(looks), "shell_exec", {"command": "", "jobId": job, "yieldAfterSeconds": 2})
            looks.append(look["structuredContent"])
    finally:
        raw.close()
    assert looks[-1]["status"] == "exited", looks[-1]
    named = {look["changes"]["undo"].split()[-1] for look in looks if look.get("changes", {}).get("undo")}
    applied = [look["changes"]["summary"] for look in looks if look.get("changes", {}).get("undo")]
    assert len(named) == 1 and len(applied) >= 2, looks  # the job applied in two looks, under one id
    history, audit = str(state / "history"), str(state / "audit.jsonl")
    done = mcp_guard("undo", named.pop(), "--history-dir", history, "--audit-log", audit)
    assert done.returncode == 0, done.stdout + done.stderr
    assert snapshot(workspace) == before
