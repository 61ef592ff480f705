"""Red team 132 F1: a git hook that runs a program by its absolute path (``/bin/sh scripts/lint.sh``,
``/usr/bin/git diff --cached --check``) makes ``hook_runs`` read that binary as shell (no dot in its name, no ``#!``
first line: ``_shell_text``), and a word of the ELF file holds a NUL: ``expand_path``/``os.path.expanduser`` raise
``ValueError: embedded null byte`` out of ``run_by_hooks``. Every command's changes in that repository then end
``transaction: failed`` — "its changes could not be judged (embedded null byte); nothing applied" —, an ordinary
``notes.txt`` too: shell_exec can change nothing there at all (fails closed: no escape, but the server is unusable
and each command's work is thrown away).

Control: the same hook naming its programs by name (``git diff …``, ``sh scripts/lint.sh``): the note lands.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from support.planted import git, landed, plant, repo

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing"),
]

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt132.json").read_text())


async def _note_lands(workspace: Path, case: str) -> tuple[bool, str]:
    spec = DATA["cases"][case]
    repo(workspace, spec["hook"], spec["files"])
    git(workspace, "commit", "-q", "--allow-empty", "-m", "hook works")
    person, out = await plant(workspace, DATA["ordinary"])
    said = json.dumps(out.get("changes"))[:800]
    why = f"questions={person.questions} out={said} transaction={out.get('transaction')}"
    return "notes.txt" in landed(out) and (workspace / "notes.txt").exists(), why


async def test_control_programs_by_name(workspace: Path) -> None:
    ok, why = await _note_lands(workspace, "control-by-name")
    assert ok, why


@pytest.mark.parametrize("case", ["bin-sh-by-path", "usr-bin-git-by-path"])
async def test_attack_program_by_absolute_path(workspace: Path, case: str) -> None:
    ok, why = await _note_lands(workspace, case)
    assert ok, why
