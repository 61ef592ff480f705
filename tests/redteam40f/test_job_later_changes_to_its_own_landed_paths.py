"""Issue 40, red team f, item 3 (a job's changes land as they would natively): a background job's look applies what
the job did so far; when the job then removed, renamed or linked again what a look had landed, the end of the job
took its own landed work for someone else's change — a removal was lost, a moved directory stayed under its old name
too, a second link landed as a conflict copy. The job's copy may hold no whiteout for what it removed (its
directory was its own when it made it), so what a look landed and the copy no longer has is the job's removal; and
a directory only the job's looks changed is the job's own."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from support.fidelity import GIT_ENV, differences, snapshot
from support.redteam import SX, call, started

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")

PHASES = [
    ("mkdir q && printf 'k\\n' > q/k", "rm q/k && touch -d 2001-01-01 q"),
    ("mv d d2", "mv d2 d3"),
    ("mkdir r && printf 'r\\n' > r/k", "mv r e/r2"),
    ("ln e/f.txt h && printf 'x\\n' >> h", "ln h h2 && printf 'y\\n' >> e/f.txt"),
]


def job_looks(workspace: Path, tmp_path: Path, command: str) -> list[dict[str, Any]]:
    """Start ``command`` as a background job (a look after 1 s), look every 2 s until it ends: each look's result."""
    raw = started(SX, workspace, tmp_path / "state")
    try:
        first = call(raw, 1, "shell_exec", {"command": command, "yieldAfterSeconds": 1}, timeout=60)
        looks = [first["structuredContent"]]
        deadline = time.monotonic() + 60
        while looks[-1].get("status") == "running" and time.monotonic() < deadline:
            look = call(raw, 1 + len(looks), "shell_exec",
                        {"command": "", "jobId": looks[0]["jobId"], "yieldAfterSeconds": 2})  # fmt: skip
            looks.append(look["structuredContent"])
    finally:
        raw.close()
    return looks


def project(root: Path) -> None:
    for d in ("d", "e"):
        (root / d).mkdir()
        (root / d / "f.txt").write_text(f"{d}\n", encoding="utf-8")


def test_what_a_job_changes_after_a_look_landed_it_lands_as_natively(workspace: Path, tmp_path: Path) -> None:
    project(workspace)
    native = tmp_path / "native"
    shutil.copytree(workspace, native, symlinks=True)
    command = " && ".join(first for first, _ in PHASES) + "; sleep 2.5; " + " && ".join(then for _, then in PHASES)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8", **GIT_ENV}
    subprocess.run(["bash", "-c", command], cwd=native, env=env, check=True, timeout=60)
    looks = job_looks(workspace, tmp_path, command)
    assert looks[-1]["status"] == "exited", looks[-1]
    assert sum(1 for look in looks if look.get("transaction") == "applied") >= 2, looks  # a look landed phase one
    conflicts = [p for look in looks for p in look.get("changes", {}).get("paths", []) if p["action"] == "conflict"]
    assert not conflicts, conflicts
    assert not differences(snapshot(native), snapshot(workspace))


def test_attack_a_name_a_job_never_touched_is_not_taken_for_one_it_removed(workspace: Path, tmp_path: Path) -> None:
    # Red team 40i: a look set the mode of a file through one name (and so of its other name, which the job's copy
    # never held); at the next look that other name, absent from the copy, was taken for one the job removed.
    (workspace / "a").write_text("a\n", encoding="utf-8")
    os.link(workspace / "a", workspace / "h1")
    command = "chmod 600 a; sleep 2.5; touch new"
    looks = job_looks(workspace, tmp_path, command)
    assert looks[-1]["status"] == "exited" and (workspace / "new").exists(), looks[-1]
    assert (workspace / "h1").stat().st_ino == (workspace / "a").stat().st_ino, looks
    assert stat.S_IMODE((workspace / "h1").stat().st_mode) == 0o600


def test_a_jobs_last_rewrite_with_an_old_time_lands_after_a_look_landed_an_earlier_write(
    workspace: Path, tmp_path: Path
) -> None:
    # Red team 40i G: the look's own write of b made the end take the job's rewrite (with an old time) for a copy
    # left as found while "someone else" wrote the file: the job's last bytes and time were dropped.
    (workspace / "b").write_text("b\n", encoding="utf-8")
    command = "printf x >> b; sleep 2.5; printf y >> b; touch -d @1009843200 b"
    looks = job_looks(workspace, tmp_path, command)
    assert looks[-1]["status"] == "exited", looks[-1]
    assert sum(1 for look in looks if look.get("transaction") == "applied") >= 2, looks
    assert (workspace / "b").read_text() == "b\nxy" and (workspace / "b").stat().st_mtime_ns == 1009843200 * 10**9
