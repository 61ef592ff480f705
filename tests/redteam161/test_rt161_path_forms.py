"""Red team 161: a directory a hook puts on PATH (or PYTHONPATH) spelled in everyday forms the reader misreads.

``hook_words._directories`` splits a search-path value at every ``:`` and keeps an entry only when it is relative,
or starts with a spelling of the top (``$PWD``, ``$(pwd)``, ``$(git rev-parse --show-toplevel)``) or of the hook's
directory, or a variable ``_anchors`` knows holds one of those. Everyday forms fall outside:

* F1 ``PATH="$PWD/tools${PATH:+:$PATH}"`` (the guarded-append idiom): the ``:`` inside ``${…}`` splits the entry,
  read as the directory ``tools${PATH`` — not ``tools``;
* F2 ``$(realpath tools)``, ``$(readlink -f tools)``, ``$(cd tools && pwd)``: a substitution left to run time, dropped;
* F3 a variable holding a relative name or one built from another variable (``TOOLS=tools``, ``TOOLS="$ROOT/tools"``);
* F4 the hook's directory through ``$(dirname "$(readlink -f "$0")")`` (the linked-hook spelling).

The hook then runs ``lint-check`` (or ``python3 -m lintcheck``) by name: ``tools/lint-check`` is not protected, a
shell_exec command rewrites it (every question declined), and the user's next ``git commit`` runs it outside the
box. Controls: ``$PWD/tools`` on PATH and PYTHONPATH are refused. Hooks and payloads travel as data
(rt161_path_forms.json); payloads write a marker file only.

Answered (``hook_words._entries``, ``_resolved``): a path's entries split only outside ``${…}``, ``$(…)`` and
backticks, what follows a directory's name cut as the rest of the path, variables the text gives expanded in turn
(relative values too), ``realpath``/``readlink -f``/``cd … && pwd`` of a directory taken as it, and the hook's own
directory through ``$(dirname "$(readlink -f "$0")")``."""

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

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt161_path_forms.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
ATTACKS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_a_path_entry_from_the_top_is_read(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case)
    assert not ran, why


@pytest.mark.parametrize("case", ATTACKS)
async def test_attack_a_path_entry_in_an_everyday_form_runs_later(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case)
    assert not ran, why
