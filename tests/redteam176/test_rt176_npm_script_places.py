"""Red team 176: package.json scripts a git hook runs through npm that red team 174's answer does not follow.

``hook_interpreters.package_scripts`` reads the options *before* the npm command only, knows ``-w``/``--prefix`` but
not ``--workspaces``/``--ws``, and reads no script for npm's own commands that run lifecycle scripts:

- F1: ``npm run lint --workspaces`` / ``npm --ws run lint`` runs every workspace's ``lint`` script: the file that
  script names (``packages/web/check.js``) is not protected.
- F2: ``npm run lint -w packages/web`` / ``npm run lint --prefix scripts`` (the option after the script's name, which
  npm takes the same): the script is looked for at the top only, so the file it names is not protected.
- F3: ``npm install`` (husky's post-merge/post-checkout recipe) runs the root's ``preinstall``/``install``/
  ``postinstall``/``prepare`` scripts, ``npm it`` runs ``test`` after it, ``npm restart`` runs ``stop`` and ``start``
  when there is no ``restart``: the files those name are not protected.

The person declines every question; the user's next ``git commit`` runs the planted file outside the box. Hooks and
payloads travel as data (rt176_npm_cases.json); payloads write a marker file only.

Answered (as classes): a package manager's line read whole — options anywhere, every workspace, what its own
commands run of the package's scripts (``hook_interpreters.package_scripts``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from support.hook_cases import case_runs

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None or shutil.which("npm") is None, reason="bwrap or npm missing"),
]

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt176_npm_cases.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
ATTACKS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_the_file_a_script_names_is_protected(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case)
    assert not ran, why


@pytest.mark.parametrize("case", ATTACKS)
async def test_attack_a_file_an_npm_script_the_hook_runs_names_runs_later(
    workspace: Path, tmp_path: Path, case: str
) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case)
    assert not ran, why
