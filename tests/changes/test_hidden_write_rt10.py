"""Red team 10: a real write by someone else hidden behind a name note of another call (name_changes, 5de89d9).

Three parties on one project where ``b.txt`` and ``d/bl`` are two names of one file:

* call B (slow): ``sleep 3; echo y >> d/bl`` -- it started first;
* call A (fast, 0.5 s later): ``rm b.txt`` -- its apply looks at b.txt, checks it unchanged, then waits for the
  file's flock (``nofollow.held``, up to 2 s) before it keeps b.txt (a rename into the history: a name step);
* an outside writer that holds the flock on the file (as file_write's writers do), appends ``P`` to it through
  ``d/bl`` while A waits, then lets go.

Natively d/bl ends as ``b / P / y`` (every write kept). A's step notes the file's ctime as it looked *before* the
wait (``run.named(real)`` with the stale stat), so the ctime its rename stamped chains back past the outside
write; B then finds d/bl "unchanged" and lands its copy (``b / y``) over it: the outside write is lost, no
conflict said. Before 5de89d9 B saw a ctime later than its start: a conflict, nothing lost.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from support.boxed import run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


def waiter_on(path: Path) -> bool:
    """Whether the server holds ``path`` open (its apply, polling for the file's flock)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"--audit-log" not in f.read():
                    continue  # the server only (not the command in its box)
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == str(path):
                    return True
            except OSError:
                continue
    return False


def outside_writer(path: Path, watched: Path, got: threading.Event, done: threading.Event, log: list[str]) -> None:
    fd = os.open(path, os.O_RDWR | os.O_APPEND)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        got.set()
        deadline = time.monotonic() + 20
        while not waiter_on(watched) and time.monotonic() < deadline:
            time.sleep(0.01)
        log.append(f"waiter seen: {waiter_on(watched)}")
        os.write(fd, b"P\n")  # someone else's real change, while A waits for the lock
        time.sleep(0.05)
    finally:
        os.close(fd)  # lets A go
        done.set()


@pytest.mark.parametrize("fast", ["rm b.txt", "mv b.txt c.txt"])
async def test_a_write_made_while_another_call_waits_to_remove_a_name_is_not_lost(workspace: Path, fast: str) -> None:
    d = workspace / "d"
    d.mkdir()
    (workspace / "b.txt").write_text("b\n")
    os.link(workspace / "b.txt", d / "bl")
    got, done = threading.Event(), threading.Event()
    log: list[str] = []
    outs: dict[str, dict[str, Any]] = {}
    async with shell(workspace) as client, anyio.create_task_group() as tasks:

        async def call(key: str, command: str) -> None:
            outs[key] = await run(client, command, cwd=str(workspace))

        tasks.start_soon(call, "slow", "echo y >> d/bl; sleep 3")
        await anyio.sleep(0.3)
        writer = (d / "bl", workspace / "b.txt", got, done, log)
        threading.Thread(target=outside_writer, args=writer, daemon=True).start()
        got.wait(5)
        await anyio.sleep(0.2)
        tasks.start_soon(call, "fast", fast)
    assert done.is_set(), log
    text = (d / "bl").read_text()
    conflicts = outs["slow"]["changes"]["conflicts"]
    # Nothing lost: either every write is there, or the slow call said a conflict (its version set beside).
    assert "P\n" in text or conflicts, (text, outs["slow"]["changes"], outs["fast"]["changes"], log)


async def test_a_write_made_under_the_flock_while_a_call_waits_to_replace_the_file_is_not_lost(
    workspace: Path,
) -> None:
    # One call only. Its apply checks the file unchanged, then waits for its flock (``nofollow.held``); the holder
    # appends meanwhile and lets go; ``held`` checks only that the name is still the same inode, not its ctime.
    (workspace / "f.txt").write_text("f\n")
    got, done = threading.Event(), threading.Event()
    log: list[str] = []
    async with shell(workspace) as client, anyio.create_task_group() as tasks:
        outs: dict[str, Any] = {}

        async def call() -> None:
            outs["call"] = await run(client, "echo c >> f.txt", cwd=str(workspace))

        threading.Thread(
            target=outside_writer, args=(workspace / "f.txt", workspace / "f.txt", got, done, log), daemon=True
        ).start()
        got.wait(5)
        tasks.start_soon(call)
    assert done.is_set(), log
    text = (workspace / "f.txt").read_text()
    beside = [p.name for p in workspace.iterdir() if ".mcp-guard-" in p.name]
    assert "P\n" in text or outs["call"]["changes"]["conflicts"], (text, beside, outs["call"]["changes"], log)
