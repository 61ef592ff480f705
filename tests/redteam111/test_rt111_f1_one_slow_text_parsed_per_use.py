"""Red team 111 F1: the parse bound (2 s, commit db22dc1) holds per parse, not per line: a small line that keeps one
slow-to-parse text in a variable and runs it as a shell string many times (``c='…'; sh -c "$c"; sh -c "$c"; …``) is
parsed afresh at each use, each parse just under the bound. 16 KB of line keeps shell_exec judging it for minutes
(linear in the uses, up to MAX_COMMANDS = 1,000): the call is not answered, cannot be stopped (the judging runs on a
worker thread), and holds a core. docs/shell_exec.md: "one the parser cannot read within 2 s (...) is refused".

Control: the same text used once is judged (and declined) within seconds.

A person declines every question."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from support.boxed import Person, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

# tree-sitter-bash's error recovery is quadratic on a run of ``<<``: 8,000 of them parse in about 0.3-0.7 s (the
# bound is 2 s), the line itself stays small (the text is in single quotes there: parsed at once).
SLOW = "echo " + "<<" * 8000
BOUND = 30.0  # generous: fifteen times the documented per-parse bound


def _line(uses: int) -> str:
    return f"c='{SLOW}'; " + "; ".join(['sh -c "$c"'] * uses)


async def _answered_within(workspace: Path, line: str, seconds: float) -> tuple[float, Any]:
    started = time.monotonic()
    result: Any = None
    async with shell(workspace, Person(False)) as client:
        with anyio.move_on_after(seconds):
            result = await client.call_tool("shell_exec", {"command": line, "timeoutSeconds": 10})
        return time.monotonic() - started, result


async def test_control_the_slow_text_used_once_is_judged_at_once(workspace: Path) -> None:
    took, result = await _answered_within(workspace, _line(1), BOUND)
    assert result is not None, f"not answered within {BOUND} s"
    assert took < BOUND


async def test_the_slow_text_used_400_times_holds_the_call_for_minutes(workspace: Path) -> None:
    line = _line(400)
    assert len(line.encode()) < 32_000  # far under the 256 KiB line bound
    _took, result = await _answered_within(workspace, line, BOUND)
    assert result is not None, f"a {len(line.encode())}-byte line not answered within {BOUND} s (judging goes on)"
