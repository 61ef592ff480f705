"""Red team 135 F1: a file a git hook runs is read for only its first 64 KiB (``hook_configs.read_regular``'s
``_TEXT_MAX``, through ``hook_runs._text``), while docs/shell_exec.md bounds that reading by 256 KiB in all ("6
levels, 96 files, 256 KiB: past them a file is not followed") and the make reader by 65,536 lines a makefile. A
Makefile (or a shell script the hook runs) larger than 64 KiB -- a project's long Makefile, an autotools-made one --
whose goal's recipe lies past its first 64 KiB is read as if that recipe did not exist: the script the recipe runs
(``sh scripts/lint.sh``) is not protected, a shell_exec command rewrites it with no question, and the user's next
``git commit`` runs the rewritten script outside the box.

Controls: the same hook and rule in a small Makefile (or script): the rewrite is refused, nothing runs.
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

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt135_truncated.json").read_text())
CONTROLS = [case for case, spec in DATA["cases"].items() if spec["finding"] == "control"]
ATTACKS = [case for case, spec in DATA["cases"].items() if spec["finding"] != "control"]


def _files(spec: dict[str, Any]) -> dict[str, str]:
    if "filler_rules" in spec:
        filler = "".join(str(DATA["filler_rule"]).replace("{i}", str(i)) for i in range(int(spec["filler_rules"])))
    else:
        filler = "".join(str(DATA["filler_line"]).replace("{i}", str(i)) for i in range(int(spec["filler_lines"])))
    return {**spec["files"], spec["head"]: filler + spec["tail"]}


async def _commit_runs(workspace: Path, tmp_path: Path, case: str) -> tuple[bool, str]:
    spec, marker = DATA["cases"][case], tmp_path / "MARKER-hook-ran"
    payload = str(DATA["payload"]).replace("{marker}", str(marker))
    files = _files(spec)
    size = len(files[spec["head"]].encode())
    ran, why = await commit_runs(workspace, marker, spec["hook"], files, spec["planted"], payload)
    return ran, f"{spec['head']} is {size} bytes; {why}"


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_small_file_recipe_is_protected(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await _commit_runs(workspace, tmp_path, case)
    assert not ran, why


@pytest.mark.parametrize("case", ATTACKS)
async def test_attack_recipe_past_64_kib_runs_at_commit(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await _commit_runs(workspace, tmp_path, case)
    assert not ran, why
