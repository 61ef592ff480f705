"""Red team 11: a directory time a call sets on purpose (``touch -d``) while another call of the same server only
rewrites a file *inside* the directory (``echo >> d/x``: natively no change of the directory at all; the server
lands it by a rename into the directory, which moves the directory's times). ``steps._times`` takes the other
call's landing for "someone else changed the directory": the time is not set, and a conflict is said
(docs/shell_exec.md: a conflict only "where the command set it (`touch -d`) and ... someone else changed it")."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from support.boxed import run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]
OLD_NS = 1_000_000_000 * 10**9
SET_NS = 1_012_608_000 * 10**9  # 2002-02-02 UTC


@pytest.mark.parametrize("fast", ["echo y >> d/x", "touch d/x"])
async def test_a_time_set_on_purpose_while_another_call_only_wrote_inside(workspace: Path, fast: str) -> None:
    d = workspace / "d"
    d.mkdir()
    (d / "x").write_text("x\n")
    os.utime(d / "x", ns=(OLD_NS, OLD_NS))
    os.utime(d, ns=(OLD_NS, OLD_NS))
    outs: dict[str, dict[str, Any]] = {}
    async with shell(workspace) as client, anyio.create_task_group() as tasks:

        async def call(key: str, command: str) -> None:
            outs[key] = await run(client, command, cwd=str(workspace), env={"TZ": "UTC"})

        tasks.start_soon(call, "slow", "sleep 2; TZ=UTC touch -d 2002-02-02 d")
        await anyio.sleep(0.5)
        tasks.start_soon(call, "fast", fast)
    # Natively: the fast call's write inside d leaves d's time alone; the slow call's time stands.
    assert outs["fast"]["changes"]["conflicts"] == 0, str(outs["fast"]["changes"])
    assert outs["slow"]["changes"]["conflicts"] == 0, str(outs["slow"]["changes"])
    assert d.stat().st_mtime_ns == SET_NS, (d.stat().st_mtime_ns, outs["slow"]["changes"])
