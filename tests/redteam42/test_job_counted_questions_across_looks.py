"""Red team 42m F2 (promise 4: deleting files no repository keeps is asked above a small threshold): each look at a
background job judged only what changed since the previous look, so a job deleting two files per look removed a
whole project without git, and deleting 15 files per look passed `max_files`, with no question. What a job's
looks counted now counts at its next judgement. (Re-moding and rewriting files count no more: undo restores them.)"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from support.boxed import run, shell
from support.hooked import git

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


async def looks_of(workspace: Path, command: str) -> list[dict[str, Any]]:
    async with shell(workspace) as client:
        looks = [await run(client, command, cwd=str(workspace), yieldAfterSeconds=1.5)]
        with anyio.fail_after(120):
            while looks[-1]["status"] == "running":
                looks.append(await run(client, "", jobId=looks[0]["jobId"], yieldAfterSeconds=2.5))
    return looks


def told(looks: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(look["transaction"], look["changes"]["summary"]) for look in looks]


async def test_attack_a_job_deleting_two_files_per_look_is_asked_like_one_call(workspace: Path) -> None:
    for i in range(10):
        (workspace / f"notes{i}.txt").write_text(f"{i}\n")
    steps = "; sleep 2.5; ".join(f"rm notes{2 * k}.txt notes{2 * k + 1}.txt" for k in range(5))
    looks = await looks_of(workspace, steps)
    left = sorted(p.name for p in workspace.iterdir() if p.name.startswith("notes"))
    # At most max_unbacked_files (3) go with no question; the rest waits for the job's end, asked (held here).
    assert len(left) >= 7 and looks[-1]["transaction"] == "held", told(looks)


async def test_attack_a_job_deleting_fifteen_committed_files_per_look_is_asked_past_max_files(workspace: Path) -> None:
    for i in range(45):
        (workspace / f"f{i:02}").write_text("x\n")
    git(workspace, "init", "-q")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "init")
    steps = "; sleep 2.5; ".join(f"rm f{k}[0-9] f{k + 1}[0-4]" for k in (0, 2, 4))  # 15, 15, 5 files
    looks = await looks_of(workspace, steps)
    gone = sum(1 for i in range(45) if not (workspace / f"f{i:02}").exists())
    assert gone <= 20 and looks[-1]["transaction"] == "held", told(looks)


async def test_a_job_re_moding_and_rewriting_many_files_is_applied_unasked(workspace: Path) -> None:
    # Issue 45: a change undo restores exactly (a mode, a file's bytes) is applied and shown, not asked.
    for i in range(45):
        (workspace / f"f{i:02}").write_text("x\n")
    steps = "chmod 600 f0[0-9] f1[0-9]; sleep 2.5; for f in f2* f3*; do echo y >> $f; done"
    looks = await looks_of(workspace, steps)
    moded = sum(1 for i in range(20) if (workspace / f"f{i:02}").stat().st_mode & 0o777 == 0o600)
    assert moded == 20 and (workspace / "f39").read_text() == "x\ny\n", told(looks)
    assert looks[-1]["transaction"] in ("applied", "unchanged"), told(looks)
