"""Two shell_exec calls at once on one project (red team 9 F3, F4).

F3: a file with two names; one call adds or removes a name of it while the other changes it through another name.
Only the file's link count (so its ctime) moved: no one changed what the second call changes, and it lands, no
conflict copy beside it. F4: a directory time the command set (``touch -d``) while another call created a file in
that directory is said not set (a conflict), never reported as set."""

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
    """``slow`` (after a 2 s sleep) in one call, and ``fast`` in another started 0.5 s later (landing first)."""
    outs: dict[str, dict[str, Any]] = {}
    async with shell(root) as client, anyio.create_task_group() as tasks:

        async def call(key: str, command: str) -> None:
            outs[key] = await run(client, command, cwd=str(root))

        tasks.start_soon(call, "slow", f"sleep 2; {slow}")
        await anyio.sleep(0.5)
        tasks.start_soon(call, "fast", fast)
    return outs


def two_names(root: Path) -> None:
    (root / "d").mkdir()
    (root / "b.txt").write_text("b\n")
    os.link(root / "b.txt", root / "d" / "bl")
    for path in ("b.txt", "d", "."):
        os.utime(root / path, ns=(OLD_NS, OLD_NS))


@pytest.mark.parametrize(
    ("slow", "fast"),
    [("echo y >> d/bl", "rm b.txt"), ("chmod 600 d/bl", "ln b.txt third.txt"), ("mv d/bl d/bm", "rm b.txt"),
     ("rm d/bl", "ln b.txt third.txt")],
)  # fmt: skip
async def test_another_call_adding_or_removing_a_name_of_a_file_makes_no_false_conflict(
    workspace: Path, slow: str, fast: str
) -> None:
    two_names(workspace)
    outs = await slow_and_fast(workspace, slow, fast)
    changes = outs["slow"]["changes"]
    assert outs["fast"]["changes"]["conflicts"] == 0, outs["fast"]
    assert changes["conflicts"] == 0, changes
    assert not [p.name for p in workspace.rglob("*") if ".mcp-guard-" in p.name]
    d = workspace / "d"
    if slow.startswith("echo"):
        assert (d / "bl").read_text() == "b\ny\n"
    elif slow.startswith("chmod"):
        assert (d / "bl").stat().st_mode & 0o777 == 0o600
    elif slow.startswith("mv"):
        assert sorted(os.listdir(d)) == ["bm"]
    else:
        assert os.listdir(d) == []


async def test_a_directory_time_set_while_another_call_wrote_in_it_is_said_not_set(workspace: Path) -> None:
    (workspace / "d").mkdir()
    os.utime(workspace / "d", ns=(OLD_NS, OLD_NS))
    outs = await slow_and_fast(workspace, "touch -d 2002-02-02 d", "echo x > d/new")
    slow = outs["slow"]["changes"]
    assert (workspace / "d" / "new").read_text() == "x\n"
    set_it = (workspace / "d").stat().st_mtime_ns == 1_012_608_000 * 10**9
    said = [p for p in slow["paths"] if p["action"] == "conflict" and p["path"].rstrip("/") == "d"]
    assert set_it or said, slow  # natively (the other call first) the time is set; never reported set when not
    assert "set the time" not in slow["summary"] or set_it, slow


async def test_a_directory_only_another_call_changed_keeps_its_time_and_no_conflict(workspace: Path) -> None:
    # The command changed nothing in the project's root (its copy of it still has the time it had at the start);
    # another call made a file there meanwhile: the root keeps that call's time, and that is no conflict.
    (workspace / "d").mkdir()
    (workspace / "d" / "f").write_text("f\n")
    for path in ("d", "."):
        os.utime(workspace / path, ns=(OLD_NS, OLD_NS))
    outs = await slow_and_fast(workspace, "rm d/f", "echo x > top.txt")
    assert outs["slow"]["changes"]["conflicts"] == 0, outs["slow"]["changes"]
    assert (workspace / "top.txt").read_text() == "x\n" and not (workspace / "d" / "f").exists()
    assert workspace.stat().st_mtime_ns != OLD_NS  # the other call's time
