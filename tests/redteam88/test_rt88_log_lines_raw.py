"""Red team 88: a command's path reaches the server's log (stderr, which agent CLIs show the person) with its control
and bidi characters raw.

``changes/apply.py:run_step`` logs ``could not apply %s %s: %s`` with the absolute path a command named, unescaped;
``serving/launch.py`` formats records as ``%(message)s`` to stderr with no filter. A name holding an ANSI escape
(``ESC[2J`` clears the screen; ``ESC]0;…BEL`` retitles the terminal; a ``U+202E`` turns the rest of the line around)
then acts on the person's terminal. Here the step fails because the user's directory is immutable (``chattr +i``):
any failed step does it (a full disk, a directory the user made read-only, as a normal user).

The result's own text escapes it (``paths.printable``); the log line does not.
"""

from __future__ import annotations

import logging
import subprocess
import time
from pathlib import Path

import pytest

from mcp_server_guard.changes.transactions import Transactions
from support.settling import settled_call

pytestmark = pytest.mark.anyio

ESC, RLO = "\x1b", "\u202e"
NAME = "note\x1b[2J\x1b]0;owned\x07\u202etxt.md"


async def test_a_commands_path_in_a_failed_steps_log_line_is_escaped(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    caught: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            caught.append(record)

    handler = Keep(level=logging.INFO)
    top = logging.getLogger("mcp_server_guard")
    top.addHandler(handler)
    level = top.level
    top.setLevel(logging.INFO)
    transactions, part = settled
    root = tmp_path / "root"
    (root / "d").mkdir()
    (root / "d" / "keep.txt").write_text("the user's\n")
    if subprocess.run(["chattr", "+i", str(root / "d")], capture_output=True, timeout=30, check=False).returncode:
        pytest.skip("no chattr +i here")
    try:
        time.sleep(0.02)
        done = await settled_call(transactions, part, "000000000001", {f"d/{NAME}": "x\n"})
    finally:
        subprocess.run(["chattr", "-i", str(root / "d")], capture_output=True, timeout=30, check=False)
        top.removeHandler(handler)
        top.setLevel(level)
    shown = [r.getMessage() for r in caught]
    assert any("could not" in m for m in shown), (done, shown)  # (the step did fail, and was logged)
    raw = [m for m in shown if ESC in m or RLO in m or "\x07" in m]
    assert not raw, f"log lines carry the command's control/bidi characters raw: {raw!r}"
