"""Red team 165 E1: a hook line led by a long run of blanks (60 KB of spaces, then ``true``: harmless) makes the hook
reader take tens of seconds per judgement. ``hook_runs._ENTRY`` (``^\\s*-?\\s*(?:entry|run|script)\\s*:…``, run with
``findall`` on every line) tries each split of the leading blanks between its two ``\\s*``: quadratic in the run's
length. 4 KB took 0.3 s, 16 KB 2.5 s, 60 KB tens of seconds; a 256 KiB hook (the reader's bound) about ten minutes —
for every shell_exec call that changes a file.

Control: a line of the same size whose blanks follow a word (``true <blanks> true``) is read in well under a
second.

Answered: ``hook_runs._ENTRY`` takes its blanks possessively."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.hook_cases import hooked_call_seconds

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing"),
]

SIZE = 60_000
BOUND = 5.0  # seconds one small call may take, judgement included


async def test_control_blanks_after_a_word_are_read_quickly(workspace: Path) -> None:
    took = await hooked_call_seconds(workspace, "true" + " " * SIZE + "true")
    assert took < BOUND, f"one call took {took:.1f} s"


async def test_attack_a_blank_led_hook_line_stalls_every_call(workspace: Path) -> None:
    took = await hooked_call_seconds(workspace, " " * SIZE + "true")
    assert took < BOUND, f"one call took {took:.1f} s"
