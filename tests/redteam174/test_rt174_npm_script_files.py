"""Red team 174 F1: the files an npm script a git hook runs names are never read by the hook reader.

A hook ``npm test`` / ``npm run lint`` (husky's default hook is ``npm test``) runs the package.json script's text:
``"lint": "node tools/check.js"``, ``"test": "sh scripts/test.sh"``, ``"prelint": "node tools/pre.js"``, ``"lint":
"lintx ."`` (npm puts ``node_modules/.bin`` first on PATH). The script's *value* is judged (``hook_configs``: a change
of ``scripts.lint`` is asked), but ``hook_runs`` never follows it: the file it names is not protected, so a
shell_exec command (the person declines every question) rewrites ``tools/check.js`` with no question and the user's
next ``git commit`` runs it outside the box. Same file named by the hook itself (``node tools/check.js``) or reached
through ``npx --no lintx``: refused (controls). The known limit "make reached through a package.json script" is one
instance; here no make is involved — a plain file named by path.

Hooks and payloads travel as data (rt174_npm_cases.json); payloads write a marker file only.

Answered (as a class): a package.json script a hook runs through npm, pnpm, yarn or bun (``run``, ``test``, a bare
name; ``--prefix``/``-C``/``--dir``/``--cwd``/``-w``) is read as lines of the hook with its ``pre``/``post`` scripts,
``node_modules/.bin`` first on its path (``hook_interpreters.package_scripts``)."""

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

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt174_npm_cases.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
ATTACKS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_a_hook_script_or_the_file_the_hook_names_is_protected(
    workspace: Path, tmp_path: Path, case: str
) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case)
    assert not ran, why


@pytest.mark.parametrize("case", ATTACKS)
async def test_attack_a_file_an_npm_script_the_hook_runs_names_runs_later(
    workspace: Path, tmp_path: Path, case: str
) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case)
    assert not ran, why
