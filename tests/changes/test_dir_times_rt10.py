"""Red team 10: a directory time another call's change kept (``steps._times`` + ``name_changes.dir_time_at``,
5de89d9). Two calls that each only make a file in the same directory: neither set the directory's time on
purpose, so natively (and as docs/shell_exec.md promises: "where the command did not set it, that is no
conflict") nothing is a conflict. The slow call's copy of the directory has the time its own new entry gave it,
not the time at its start: taken for a ``touch -d`` of its own, and said as a conflict."""

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


async def slow_and_fast(root: Path, slow: str, fast: str) -> dict[str, dict[str, Any]]:
    outs: dict[str, dict[str, Any]] = {}
    async with shell(root) as client, anyio.create_task_group() as tasks:

        async def call(key: str, command: str) -> None:
            outs[key] = await run(client, command, cwd=str(root))

        tasks.start_soon(call, "slow", f"sleep 2; {slow}")
        await anyio.sleep(0.5)
        tasks.start_soon(call, "fast", fast)
    return outs


@pytest.mark.parametrize(
    ("slow", "fast"),
    [("echo a > d/a", "rm d/old"), ("mkdir d/sub", "echo b > d/b")],
)  # fmt: skip
async def test_two_calls_each_making_an_entry_in_one_directory_is_no_conflict(
    workspace: Path, slow: str, fast: str
) -> None:
    d = workspace / "d"
    d.mkdir()
    (d / "old").write_text("o\n")
    for path in (d / "old", d, workspace):
        os.utime(path, ns=(OLD_NS, OLD_NS))
    outs = await slow_and_fast(workspace, slow, fast)
    assert outs["fast"]["changes"]["conflicts"] == 0, outs["fast"]["changes"]
    assert outs["slow"]["changes"]["conflicts"] == 0, outs["slow"]["changes"]["paths"]


async def test_a_directory_time_another_program_overrode_is_never_reported_set(workspace: Path) -> None:
    # As the rt9 test of two calls, but the other writer is another program (not this server's call): the server
    # does not know the directory's time at the command's start then (the command's copy may only have kept it):
    # the other program's time stays, and the result does not say the command's was set.
    d = workspace / "d"
    d.mkdir()
    os.utime(d, ns=(OLD_NS, OLD_NS))
    async with shell(workspace) as client, anyio.create_task_group() as tasks:
        outs: dict[str, Any] = {}

        async def call() -> None:
            outs["slow"] = await run(client, "sleep 2; touch -d 2002-02-02 d", cwd=str(workspace))

        tasks.start_soon(call)
        await anyio.sleep(1.0)
        (d / "new").write_text("x\n")  # another program
    slow = outs["slow"]["changes"]
    set_it = d.stat().st_mtime_ns == 1_012_608_000 * 10**9
    assert not set_it and (d / "new").read_text() == "x\n"
    assert "set the time" not in slow["summary"], slow
    assert not [p for p in slow["paths"] if p["path"].rstrip("/") == "d" and p["action"] != "conflict"], slow
