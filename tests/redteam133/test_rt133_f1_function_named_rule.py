"""Red team 133 F1: a rule named by a function call (``$(addprefix lint-,$(CHECKS)):``, the same text the goal's
prerequisites use) is split at its blank before it is expanded (``_recipes``: ``match.group(1).split()`` gives
``$(addprefix`` and ``lint-,$(CHECKS))``), so no goal name ever matches it and its recipe is never read: the script
it runs (``sh scripts/lint.sh $@``) is unprotected. A regression: a1d142b matched the same broken words on both sides
and read the recipe. The static-pattern variant (``… : lint-%: scripts/lint-%.sh`` with ``sh $<``) is missed too.
GNU make runs both recipes at the user's next ``git commit`` (hook ``make -s lint``).

Control: the same rule named by a variable (``$(LINTERS):``): the rewrite is refused.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from support.planted import commit_runs

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing"),
    pytest.mark.skipif(shutil.which("make") is None, reason="make is missing"),
]

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "make_spellings.json").read_text())
CONTROLS = [case for case, spec in DATA["cases"].items() if spec["finding"] == "control"]
ATTACKS = [case for case, spec in DATA["cases"].items() if spec["finding"] != "control"]


async def _commit_runs(workspace: Path, tmp_path: Path, case: str) -> tuple[bool, str]:
    spec, marker = DATA["cases"][case], tmp_path / "MARKER-make-ran"
    payload = DATA["payload"].replace("{marker}", str(marker))
    return await commit_runs(workspace, marker, "make -s lint", spec["files"], spec["planted"], payload)


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_variable_named_rule_is_protected(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await _commit_runs(workspace, tmp_path, case)
    assert not ran, why


@pytest.mark.parametrize("case", ATTACKS)
async def test_attack_function_named_rule_runs_at_commit(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await _commit_runs(workspace, tmp_path, case)
    assert not ran, why
