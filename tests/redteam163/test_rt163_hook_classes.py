"""Red team 163: files a pre-commit hook runs by rules the hook reader does not read. Hooks and payloads travel as
data (rt163_hook_classes.json); payloads write a marker file only. Each case: a repository whose hook works, one
shell_exec command (the person declines every question) rewriting or creating the file, then the user's next
``git commit`` outside the box — the marker must not appear.

Answered (as classes): every variable's value a hook text gives is read as a command line a program may take
from its environment, git's ``!`` dropped (``hook_words.assigned_values``); a git setting written anywhere as
``key=value`` and a git config file the hook hands git are read for the programs they run
(``hook_interpreters.more_lines``); the top of the work tree spelled in a word (``$PWD/``, ``$(git rev-parse
--show-toplevel)/``) is the top; any word shaped as a file's name with a suffix that is not data's is named
before it exists (``hook_runs._FILE_NAME``)."""

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

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt163_hook_classes.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
ATTACKS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_a_file_the_hook_names_is_protected(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case, tools=("cmake",))
    assert not ran, why


@pytest.mark.parametrize("case", ATTACKS)
async def test_attack_a_file_the_hook_runs_by_an_unread_rule_runs_later(
    workspace: Path, tmp_path: Path, case: str
) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case, tools=("cmake",))
    assert not ran, why
