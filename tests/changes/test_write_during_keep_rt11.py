"""Red team 11: a write someone else makes while a name step copies the file into the history (a file with several
names is always kept by copy, ``files.kept.keep_data``) is absorbed into the step's name note (``after`` is looked
at once the step is done, ``Run.named(real, os.fstat(fd))``): another call then takes the file for "only names
changed" and lands its older copy over the write.

Project: ``big.txt`` and ``d/bl`` are two names of one large file.

* call B (slow, started first): ``echo y >> d/bl; sleep 3``;
* call A: ``rm big.txt`` -- its apply holds the file (``nofollow.held``), checks its ctime, then copies it whole into
  the history (several names: copied, with a SHA-256, for a 128 MiB file that is a few hundred ms), then unlinks
  ``big.txt`` and notes (ctime before, what the file is *now*);
* an outside program (no flock: ``printf P >> d/bl`` from a terminal, a logger) appends to ``d/bl`` while the copy
  runs.

Natively ``d/bl`` ends with both ``y`` and ``P``. Here B lands its copy (``... y``) over ``... P`` with no conflict.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_server_guard.paths import state_dir
from support.boxed import run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

SIZE = 64 << 20


def _size(path: Path) -> int:
    """A file's size; 0 once it is gone (a metadata file's temp name is renamed within microseconds: a writer that
    stopped on it never wrote, and the test then passed or failed for nothing: the failure at stop 65)."""
    try:
        return os.path.getsize(path)
    except FileNotFoundError:
        return 0


def outside_writer(path: Path, history: Path, done: threading.Event, log: list[str]) -> None:
    """Appends once a copy into the history is under way (a ``.<entry>.tmp`` file growing there), no flock."""
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            try:
                names = os.listdir(history)
            except FileNotFoundError:
                names = []
            busy = [n for n in names if n.startswith(".") and n.endswith(".tmp") and not n.endswith(".json.tmp")
                    and not n.startswith(".key")]  # fmt: skip
            big = [n for n in busy if _size(history / n) > (1 << 20)]
            if big:
                fd = os.open(path, os.O_WRONLY | os.O_APPEND)
                try:
                    os.write(fd, b"P\n")
                finally:
                    os.close(fd)
                log.append(f"wrote during copy of {big}")
                return
            time.sleep(0.002)
        log.append("no copy seen")
    except OSError as exc:
        log.append(f"writer: {exc}")
    finally:
        done.set()


@pytest.mark.parametrize("fast", ["rm big.txt", "mv -f o.txt big.txt"])
async def test_a_write_made_while_a_name_step_copies_the_file_into_the_history_is_not_lost(
    workspace: Path, fast: str
) -> None:
    d = workspace / "d"
    d.mkdir()
    with open(workspace / "big.txt", "wb") as f:
        f.write(b"x" * (SIZE - 2) + b"b\n")
    os.link(workspace / "big.txt", d / "bl")
    (workspace / "o.txt").write_text("o\n")
    done = threading.Event()
    log: list[str] = []
    outs: dict[str, dict[str, Any]] = {}
    async with shell(workspace) as client, anyio.create_task_group() as tasks:

        async def call(key: str, command: str) -> None:
            outs[key] = await run(client, command, cwd=str(workspace))

        tasks.start_soon(call, "slow", "echo y >> d/bl; sleep 4")
        await anyio.sleep(1.0)
        threading.Thread(
            target=outside_writer, args=(d / "bl", state_dir() / "history", done, log), daemon=True
        ).start()
        tasks.start_soon(call, "fast", fast)
    assert done.is_set(), log
    with open(d / "bl", "rb") as landed:
        landed.seek(SIZE - 2)
        tail = landed.read()
    conflicts = outs["slow"]["changes"]["conflicts"]
    # Nothing lost: the outside write is there, or the slow call said a conflict (its version beside).
    assert b"P\n" in tail or conflicts, (tail, outs["slow"]["changes"], outs["fast"]["changes"], log)
