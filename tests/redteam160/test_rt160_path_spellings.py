"""Red team 160 F1: a directory a hook puts first on PATH, spelled in ways the reader does not resolve.

``hook_words.put_on_path`` (and ``hook_runs.path_dirs``) take a PATH entry from the top when it starts with
``$PWD``, ``${PWD}``, ``$(pwd)`` or ``$(git rev-parse --show-toplevel)``, from the hook's directory when it starts
with ``$(dirname "$0")``; every other entry that starts with ``$`` is dropped ("left to a variable"), and one that
starts with a backtick is joined to the top as a literal directory name. Everyday hooks spell the top:

* ``ROOT="$(git rev-parse --show-toplevel)"`` then ``export PATH="$ROOT/tools:$PATH"`` (the value in a variable);
* ``PATH="`pwd`/tools:$PATH"`` (backticks), ``$(pwd -P)`` (an option);
* ``HERE="$(cd "$(dirname "$0")" && pwd)"`` then ``$HERE/../../tools``.

The hook then runs ``lint-check`` by its name alone: the file ``tools/lint-check`` runs. Neither the protected
list, nor the hook reader (which looks for a bare name only at the top, the hook's directory and the directories it
cds to), nor ``effects._shadows`` (``path_dirs`` drops the same entries) names it: one shell_exec command (the person
declines every question) rewrites it — or makes it, where the hook runs it only if present — and the user's next
``git commit``, outside the box, runs it.

The same reading (``hook_words._directories``) serves the language search paths and git's exec path
(``search_dirs``, ``_EXEC_PATH``): ``export PYTHONPATH="$ROOT/tools"`` then ``python3 -m lintcheck`` runs
``tools/lintcheck.py``; ``git --exec-path="$ROOT/tools" lintcheck`` runs ``tools/git-lintcheck`` — both unprotected.

Controls: ``$PWD/tools`` and ``$(git rev-parse --show-toplevel)/tools`` on PATH, ``PYTHONPATH="$PWD/tools"`` —
refused, nothing runs. Hooks and payload
(which writes a marker file only) travel as data: rt160_path_spellings.json.

Answered (``hook_words._anchors``): the top of the work tree and the text's own directory by the spellings hooks use
(``$(pwd -P)``, backticks, ``$(cd "$(dirname "$0")" && pwd)``), in place or held in a variable the text gives one."""

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
]

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt160_path_spellings.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
ATTACKS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_a_path_entry_from_the_top_is_read(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case)
    assert not ran, why


@pytest.mark.parametrize("case", ATTACKS)
async def test_attack_a_path_entry_spelled_otherwise_runs_later(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case)
    assert not ran, why
