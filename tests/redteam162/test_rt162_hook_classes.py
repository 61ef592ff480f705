"""Red team 162: files a hook runs by rules the reader does not read (F2 run-parts of a directory named without a
slash, find -exec {} running the files found; F3 a git shell alias given with -c). Hooks and payloads travel as data
(rt162_hook_classes.json); payloads write a marker file only. Answered: every word of a line that runs a directory's
files names that directory (counted whole where it is one); what a git -c setting runs (an alias's !command, a
program key) is read as a line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from support.hook_cases import case_runs

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing"),
]

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt162_hook_classes.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
ATTACKS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_a_file_the_hook_names_is_protected(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case)
    assert not ran, why


@pytest.mark.parametrize("case", ATTACKS)
async def test_attack_a_file_the_hook_runs_by_an_unread_rule_runs_later(
    workspace: Path, tmp_path: Path, case: str
) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case)
    assert not ran, why
