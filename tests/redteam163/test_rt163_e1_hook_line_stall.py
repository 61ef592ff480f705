"""Red team 163 E1: a hook line whose words are ``-c.`` repeated (60 KB, harmless: ``true -c.-c.…``) makes the hook
reader take seconds per judgement. ``hook_interpreters._GIT_SETTING`` (``-c\\s*["']?([\\w.-]+)=…``, added for red team
162 F3) and ``hook_runs._OPERANDS`` (``-([a-zA-Z][\\w./:-]+\\.\\w+)``) both run ``[\\w.-]+`` to the end of the word from
every ``-c``/``-x`` start, then back off one character at a time: quadratic in the word's length. 16 KB took 1.3 s,
64 KB 16 s, a 256 KiB hook (the reader's bound) minutes — for every shell_exec call that changes a file.

Control: a line of the same size shaped ``-a.-`` (the ``-`` after a word character) is read in well under a second.

Answered: ``_OPERANDS`` takes an option's run whole and possessively, then cuts it at its last suffix (16 tails at
most); ``_GIT_SETTING``'s key is bounded and possessive."""

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


async def test_control_a_long_plain_hook_line_is_read_quickly(workspace: Path) -> None:
    took = await hooked_call_seconds(workspace, "true " + "-a.-" * (SIZE // 4))
    assert took < BOUND, f"one call took {took:.1f} s"


async def test_attack_a_hook_line_of_dash_c_dots_stalls_every_call(workspace: Path) -> None:
    took = await hooked_call_seconds(workspace, "true " + "-c." * (SIZE // 3))
    assert took < BOUND, f"one call took {took:.1f} s"
