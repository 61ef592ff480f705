"""Red team 157 F1: GNU make remakes what it reads from a ``.sh`` file beside it. A pre-commit hook runs ``make
lint``. Before it runs a goal, GNU make tries to remake every makefile it read (the Makefile, each ``include``) and
every prerequisite, by its built-in implicit rules too; one of them is ``%: %.sh`` (``cat $< >$@; chmod a+x $@``).
So a file ``Makefile.sh`` newer than ``Makefile`` makes make copy it over the Makefile, re-read it and run the new
recipe; ``common.mk.sh`` does the same to an included makefile, ``scripts/check.sh`` to a prerequisite program the
recipe then runs. The make reader (``make_reads``/``hook_runs``) names the Makefile, its includes and what its
recipes run, never ``<each of them>.sh``: one shell_exec command (the person declines every question) creates the
``.sh`` file with no question, and the user's next ``git commit``, outside the box, runs it (and make rewrites the
user's Makefile with it as it goes).

Controls: the same payload written to the Makefile, the included makefile or the prerequisite itself is refused or
asked; nothing runs. Hooks and payloads (which write a marker file only) travel as data: rt157_make_remakes.json.

Answered (``hook_interpreters.make_sources``): every file make reads or may make — its makefiles, their includes, what
its recipes name — names what its built-in rules may remake it from (its name with anything after it; a made
suffix's stem)."""

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
    pytest.mark.skipif(shutil.which("make") is None, reason="make is missing"),
]

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt157_make_remakes.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
ATTACKS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_what_make_reads_rewritten_is_refused(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case, ("make",))
    assert not ran, why


@pytest.mark.parametrize("case", ATTACKS)
async def test_attack_a_dot_sh_file_make_remakes_a_makefile_or_prerequisite_from(
    workspace: Path, tmp_path: Path, case: str
) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case, ("make",))
    assert not ran, why
