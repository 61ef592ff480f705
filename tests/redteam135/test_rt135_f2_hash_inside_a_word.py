"""Red team 135 F2: ``hook_runs.program_words`` splits a line with ``shlex.split(command, comments=True)``, and
shlex starts a comment at a ``#`` *inside* a word, where the shell does not (a comment starts only at a word's
start). Everything after ``$#`` (the argument count), ``${VAR#prefix}`` (a trimmed parameter) or a flake reference
``.#ci`` is dropped: ``[ $# -eq 0 ] && sh scripts/lint.sh`` names nothing. The script the hook (or a script it runs,
or a make recipe) runs is then not protected: a shell_exec command rewrites it with no question and the user's next
``git commit`` runs it outside the box.

Controls: the same lines without a ``#`` in a word: the rewrite is refused, nothing runs.
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

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt135_hash_words.json").read_text())
CONTROLS = [case for case, spec in DATA["cases"].items() if spec["finding"] == "control"]
ATTACKS = [case for case, spec in DATA["cases"].items() if spec["finding"] != "control"]


async def _commit_runs(workspace: Path, tmp_path: Path, case: str) -> tuple[bool, str]:
    spec, marker = DATA["cases"][case], tmp_path / "MARKER-hook-ran"
    payload = str(DATA["payload"]).replace("{marker}", str(marker))
    return await commit_runs(workspace, marker, spec["hook"], spec["files"], spec["planted"], payload)


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_line_without_hash_is_protected(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await _commit_runs(workspace, tmp_path, case)
    assert not ran, why


@pytest.mark.parametrize("case", ATTACKS)
async def test_attack_hash_inside_a_word_hides_the_script(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await _commit_runs(workspace, tmp_path, case)
    assert not ran, why
