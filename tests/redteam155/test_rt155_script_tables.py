"""Red team 155 F3 (LOW, unit level: pdm, hatch and pipenv are not installed here): a hook running a Python
project manager's named script (``pdm run lint``, ``hatch run lint``, ``pipenv run lint``) runs the command the
manifest's script table gives (``[tool.pdm.scripts]``, ``[tool.hatch.envs.*.scripts]``/``hatch.toml``, Pipfile's
``[scripts]``), as ``npm run lint`` runs package.json's and ``poe lint`` pyproject's ``[tool.poe.tasks]`` — both of
which the hook reader counts (``hook_runs._RECIPE_FILES``, ``hook_configs``). These three are not in
``_RECIPE_FILES``, so the manifest is not counted: a command changing ``lint`` to any program lands unasked (no
install hook is set, so ``installer_hook_keys`` has nothing to judge) and the user's next commit runs it.

Answered: pdm, hatch, pipenv and pixi join ``_RECIPE_FILES`` (their manifests read whole, as poe's).

Controls: ``poe lint`` and ``npm run lint`` count their files. Data: rt155_script_tables.json (tool names only).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from mcp_server_guard.git_dirs import _hooks_rule
from mcp_server_guard.hook_runs import run_by_hooks

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt155_script_tables.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
ATTACKS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")


def _counted(root: Path, case: str) -> bool:
    spec = DATA["cases"][case]
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "hooks" / "pre-commit").write_text(f"#!/bin/sh\n{spec['hook']}\n")
    (root / str(spec["file"])).write_text(str(spec["text"]))
    found = run_by_hooks([str(root / ".git" / "hooks")], str(root), None)
    npm = root / "package.json"
    if str(spec["file"]) == "package.json":  # (package.json's scripts are judged by content: hook_configs)
        from mcp_server_guard.hook_configs import changed_hook_keys

        return bool(changed_hook_keys(npm.read_bytes(), b'{"scripts": {"lint": "sh x"}}', [spec["hook"]]))
    return _hooks_rule(os.path.join(os.path.realpath(root), str(spec["file"])), found) is not None


@pytest.mark.parametrize("case", CONTROLS)
def test_control_script_table_a_hook_runs_counts(tmp_path: Path, case: str) -> None:
    assert _counted(tmp_path, case)


@pytest.mark.parametrize("case", ATTACKS)
def test_attack_script_table_a_hook_runs_is_not_counted(tmp_path: Path, case: str) -> None:
    assert _counted(tmp_path, case), f"{DATA['cases'][case]['file']} (its scripts run by the hook) is not counted"
