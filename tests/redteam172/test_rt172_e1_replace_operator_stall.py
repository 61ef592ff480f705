"""Red team 172 E1: a hook of a few KB whose lines apply bash's pattern replacement to a long static value
(``x=aaaa…`` of 1,000 characters, then ``"${x//*Z/y}"`` on each of 40 lines: harmless, it runs nothing) makes the hook
reader take about 1.5 s per line, for every shell_exec call that changes a file. ``shell_words._replaced`` tries
every end of every start with ``fnmatch`` (quadratic calls, each linear): about 1 s for one 1,000-character value;
``hook_words.assigned`` does it for each line that names the variable, for each place the hook is read from. 20
lines took 29 s for one ``git_rule``; a 256 KiB hook (the reader's bound) holds thousands of such lines.

Control: the same lines with ``${x%%*Z}`` (trimmed, linear) are read in well under a second.

Answered: a replacement is one regex search (``shell_words._replaced``), a trim compiled once, each operation
memoised."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.hook_cases import hooked_call_seconds

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing"),
]

VALUE = "a" * 1000
LINES = 40
BOUND = 5.0  # seconds one small call may take, judgement included


def _hook(operation: str) -> str:
    return "\n".join([f"x={VALUE}", *[f'echo "${{x{operation}}}" >/dev/null'] * LINES])


async def test_control_a_trimmed_value_is_read_quickly(workspace: Path) -> None:
    took = await hooked_call_seconds(workspace, _hook("%%*Z"), "#!/bin/bash")
    assert took < BOUND, f"one call took {took:.1f} s"


async def test_attack_a_replaced_value_stalls_every_call(workspace: Path) -> None:
    took = await hooked_call_seconds(workspace, _hook("//*Z/y"), "#!/bin/bash")
    assert took < BOUND, f"one call took {took:.1f} s"
