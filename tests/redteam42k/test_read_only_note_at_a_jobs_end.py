"""Red team 6 R4: in ``--mode read-only`` (the box's read-only view) a write that fails says the session is
read-only (``changes.reason``) at a background job's end too, as it does for a call."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest

from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


async def test_a_read_only_sessions_job_end_says_why_its_write_failed(workspace: Path) -> None:
    async with shell(workspace, Person(answer=False), "--mode", "read-only") as client:
        started = await run(client, "sleep 2; echo done > job.txt; echo ok", yieldAfterSeconds=0.5)
        assert started["status"] == "running", started
        ended = started
        with anyio.fail_after(30):
            while ended["status"] == "running":
                await anyio.sleep(1)
                ended = await run(client, "", jobId=started["jobId"])
    assert "Read-only file system" in ended["stderr"], ended
    assert "read-only" in ended["changes"]["reason"], (
        f"the job's end does not say the session is read-only: changes={ended['changes']}"
    )
