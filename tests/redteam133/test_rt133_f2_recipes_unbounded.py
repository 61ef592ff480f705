"""Red team 133 F2: ``make_reads._recipes`` has no bound of its own: a rule line naming N targets followed by M
recipe lines appends each line to every target's list (N×M), and each of the (≤1024) goals reached copies its M
lines into ``kept``, each through ``_automatic`` — all before the Expander's 1 MiB / 20,000-step bounds apply to the
joined result. A 62 KiB Makefile (``lint: a0 … a999`` / ``a0 … a999:`` / 18,000 lines ``\\tx``) read because the
pre-commit hook runs ``make -s lint`` makes every judgement in that repository take ~30 s of CPU and ~350 MiB (and a
1 MiB text that ``_runs`` then splits line by line); writing an ordinary ``notes.txt`` waits for it each time.

The makefile is the user's (the model cannot write it: it is protected), so this needs such a file in the tree.
Control: the same command with an ordinary Makefile judged in about a second.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from support.planted import landed, plant, repo

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing"),
]

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt133.json").read_text())


def _bomb() -> str:
    spec = DATA["bomb"]
    names = " ".join(f"{spec['prefix']}{i}" for i in range(spec["names"]))
    head, recipe, lines = str(spec["head"]), str(spec["recipe"]), int(spec["lines"])
    return f"{head}{names}\n{names}:\n" + recipe * lines


async def _judged_in(workspace: Path, makefile: str) -> tuple[float, str, dict[str, Any]]:
    repo(workspace, DATA["hook"], {"Makefile": makefile})
    start = time.monotonic()
    person, out = await plant(workspace, DATA["ordinary"])
    took = time.monotonic() - start
    why = f"took {took:.1f}s questions={person.questions} transaction={out.get('transaction')} landed={landed(out)}"
    return took, why, out


async def test_control_ordinary_makefile(workspace: Path) -> None:
    took, why, out = await _judged_in(workspace, DATA["control_makefile"])
    assert took < DATA["seconds_max"] and "notes.txt" in landed(out), why


async def test_attack_many_targets_sharing_many_recipe_lines(workspace: Path) -> None:
    # Judged within the bound; the makefile is past what the reader reads (a rule's 4,096 recipe lines), so what the
    # hook runs there is known only in part and the reader fails closed: its directory counts whole (red team 135 F1).
    took, why, out = await _judged_in(workspace, _bomb())
    assert took < DATA["seconds_max"], why
    assert "notes.txt" not in landed(out) and "past what the judge" in str(out), why
