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
import time
from pathlib import Path

import pytest

from support.boxed import Person, run, shell
from support.planted import git

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing"),
]

VALUE = "a" * 1000
LINES = 40
BOUND = 5.0  # seconds one small call may take, judgement included


def _repo(workspace: Path, operation: str) -> None:
    git(workspace, "init", "-q")
    hook = workspace / ".git" / "hooks" / "pre-commit"
    body = "\n".join([f"x={VALUE}", *[f'echo "${{x{operation}}}" >/dev/null'] * LINES])
    hook.write_text(f"#!/bin/bash\n{body}\n")
    hook.chmod(0o755)
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "--no-verify", "-m", "init")


async def _call_seconds(workspace: Path) -> float:
    async with shell(workspace, Person(answer=False)) as client:
        await run(client, "echo warm > warm.txt", timeout=900)
        start = time.monotonic()
        out = await run(client, "echo x > note.txt", timeout=900)
        took = time.monotonic() - start
    assert (workspace / "note.txt").read_text() == "x\n", out
    return took


async def test_control_a_trimmed_value_is_read_quickly(workspace: Path) -> None:
    _repo(workspace, "%%*Z")
    took = await _call_seconds(workspace)
    assert took < BOUND, f"one call took {took:.1f} s"


async def test_attack_a_replaced_value_stalls_every_call(workspace: Path) -> None:
    _repo(workspace, "//*Z/y")
    took = await _call_seconds(workspace)
    assert took < BOUND, f"one call took {took:.1f} s"
