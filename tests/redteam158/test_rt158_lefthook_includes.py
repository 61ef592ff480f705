"""Red team 158 F1, F2: what lefthook reads besides its main config. The hook reader reads the hook managers'
configs at the top (``lefthook.yml``: protected whole) for what they run, but not the files lefthook itself takes from
them:

* F1 ``extends:`` — lefthook merges every file listed there (a glob too) into its config:
  ``extends: [lefthook-base.yml]`` makes ``lefthook-base.yml`` a hook config as much as ``lefthook.yml``. Written
  by its bare name it is no protected path (``lefthook.*`` wants a dot after the name), the reader (YAML: no "any
  word naming a file") does not name it, and does not read it in turn either — so neither the extended config nor
  what it runs (``run: sh tools/lint.sh``) is protected. One shell_exec command (the person declines every
  question) adds a ``run:`` to it, or rewrites the script it runs, with no question; the user's next ``git
  commit``, outside the box, runs it.
* F2 ``source_dir:`` — lefthook runs the ``scripts:`` it lists from ``<source_dir>/<hook>/<name>``
  (``.lefthook/`` by default, protected). With ``source_dir: githooks/`` the script ``githooks/pre-commit/check.sh``
  is named by neither the protected list nor the reader (which looks for ``check.sh`` at the top).

Controls: the main config itself, and a script in the default ``.lefthook/`` source dir — refused, nothing runs.
Configs and payloads (which write a marker file only) travel as data: rt158_lefthook_includes.json. Needs
``lefthook`` on PATH (skipped otherwise; e.g. ``npm install lefthook`` in a temporary directory, its
``node_modules/lefthook-linux-x64/bin`` first on PATH).

Answered (``hook_interpreters.manager_lines``): the files a hook manager's config takes in (``extends:``, globs as
patterns) are read whole and named; the scripts of its ``source_dir:`` directories are any file two levels below;
every file lefthook reads (local and ``.config/`` ones, TOML and JSON) is read."""

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
    pytest.mark.skipif(shutil.which("lefthook") is None, reason="lefthook is not installed"),
]

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt158_lefthook_includes.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
ATTACKS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_lefthooks_own_config_and_default_scripts_are_protected(
    workspace: Path, tmp_path: Path, case: str
) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case)
    assert not ran, why


@pytest.mark.parametrize("case", ATTACKS)
async def test_attack_a_file_lefthook_takes_from_its_config_runs_later(
    workspace: Path, tmp_path: Path, case: str
) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case)
    assert not ran, why
