"""Red team 184 F1: a name the hook reader has looked up once in a text is never looked up again in that text, even
where a later line (a code string that changes directory) gives it a place it was not looked for in before.

``hook_runs._runs`` keeps ``done``: each (word, how, goals, runs_all, rules) is expanded once a text, and the key does
not hold the places it was expanded in. A code string's ``cd`` (``sh -c 'cd web && ./lint.sh'``, ``bash -c "cd web;
…"``, ``trap 'cd web && …' EXIT``) adds its directory to the places only while that line is read (``more_places``).
So a hook that first runs ``./lint.sh`` at the top and then the same name in a code string that changed directory has
``web/lint.sh`` — a file the hook runs — unprotected: a command rewrites it with no question, the user's next ``git
commit`` runs it outside the box. Not a regression of HEAD's line memo (HEAD~1 misses it the same: the memo only
re-reads a line when the places grew, and ``done`` then skips the name) — the same class of memo: a cache keyed
without the places its answer depends on (``known``, the words looked up once a text, is keyed the same way).

Controls: the code string alone, or before the top's line, has ``web/lint.sh`` protected (the command is refused).
Hooks and payloads travel as data (rt184_hook_cases.json); payloads write a marker file only. The person declines
every question after the command ran."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from support.hook_cases import case_runs

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap missing")]
TOOLS = ("python3", "make")

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt184_hook_cases.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
ATTACKS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_code_string_cd_name_is_protected(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case, TOOLS)
    assert not ran, why


@pytest.mark.parametrize("case", ATTACKS)
async def test_attack_name_done_at_top_then_code_string_cd_lands_unasked(
    workspace: Path, tmp_path: Path, case: str
) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case, TOOLS)
    assert not ran, why
