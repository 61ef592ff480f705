"""Red team 157 F2: pre-commit's ``language: script`` entry named by its bare name. A ``.pre-commit-config.yaml``
``repo: local`` hook with ``language: script`` and ``entry: lint-check`` runs the file ``lint-check`` at the top of
the repository (pre-commit joins a script entry to the repository's root; no PATH lookup). The hook reader reads a
hook manager's YAML as not shell (``_CONFIG``), so the rule naming "any word that names a file there is" is not
applied to it, and a word with no ``/`` and no script suffix is never named: one shell_exec command (the person
declines every question) rewrites ``lint-check`` with no question and the user's next ``git commit`` (pre-commit's
hook), outside the box, runs it.

Control: the same entry written ``./checks/lint`` (with a ``/``): refused, nothing runs. Configs and the payload
(which writes a marker file only) travel as data: rt157_precommit_script.json. Needs ``pre-commit`` on PATH
(skipped otherwise; e.g. ``uv pip install pre-commit`` into a temporary venv whose bin is put first on PATH).

Answered: a hook manager's ``entry:``/``run:`` program by its bare name is named from the top (``hook_runs._ENTRY``)."""

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
    pytest.mark.skipif(shutil.which("pre-commit") is None, reason="pre-commit is not installed"),
]

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt157_precommit_script.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
ATTACKS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_a_script_entry_with_a_slash_is_protected(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case)
    assert not ran, why


@pytest.mark.parametrize("case", ATTACKS)
async def test_attack_a_script_entry_by_its_bare_name_runs_later(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case)
    assert not ran, why
