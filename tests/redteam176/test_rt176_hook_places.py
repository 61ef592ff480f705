"""Red team 176 F4, F5: files a git hook runs that the hook reader does not name.

- F4: a directory the hook runs from that only a run knows, though its spelling is static: ``for d in packages/*/;
  do (cd "$d" && sh check); done`` (a monorepo's per-package hook) and ``find packages … -execdir ./lint.sh \\;``
  (find runs the command from each match's directory). The relative name is looked for at the top and the hook's
  own directory only, so ``packages/web/check`` / ``packages/web/lint.sh`` — existing files — are not protected.
- F5: a name with no suffix, absent when the command runs, that a code string runs: ``eval "$(cat local-checks
  2>/dev/null)"``, ``awk 'BEGIN { system("sh local-checks") }'``, ``python3 -c "…os.system('sh local-checks')"``,
  ``node -e "…execSync('sh local-checks')"`` — a command creates ``local-checks`` with no question (the same name
  piped to ``sh``, or present at the time, is refused: controls).

The person declines every question; the user's next ``git commit`` runs the planted file outside the box. Hooks and
payloads travel as data (rt176_hook_cases.json); payloads write a marker file only.

Answered (as classes): a loop's variable a line changes to as each of its words, below each root of ``find -execdir``
(``hook_runs._places``), and a file a shell, ``.``, ``source`` or ``cat`` is handed anywhere in a text, a code string
too, named before it exists (``hook_interpreters.handed_lines``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from support.hook_cases import case_runs

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap missing")]

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt176_hook_cases.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
ATTACKS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")
TOOLS = ("python3", "node", "awk", "find")


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_the_file_the_hook_runs_is_protected(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case, TOOLS)
    assert not ran, why


@pytest.mark.parametrize("case", ATTACKS)
async def test_attack_a_file_the_hook_runs_lands_unasked(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case, TOOLS)
    assert not ran, why
