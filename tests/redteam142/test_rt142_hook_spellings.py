"""Red team 142: ways a pre-commit hook runs a project file that ``hook_runs`` (lines and bash's grammar) neither
names, nor names by a pattern, nor counts whole (``PART_READ``). One shell_exec command (the person declines every
question) rewrites the file with no question; the user's next ``git commit``, outside the box, runs it.

I1  an interpreter named with its version or its distribution's name (``python3.11 check``, ``/usr/bin/python3.11
    check``, ``nodejs check``, ``perl5.36.0 check``): ``_RUNNERS`` holds ``python3``, ``node``, ``perl`` only (the
    code-string reader strips digits, the operand reader does not).
I2  an interpreter not in ``_RUNNERS`` given its program file by a name with no ``/`` and no listed suffix
    (``awk -f check.awk``, ``tclsh check.tcl``, ``cmake -P check.cmake``).
T1  a build tool that runs what its recipe file says, not in ``_RECIPE_FILES``: ``ninja lint`` (build.ninja),
    ``ninja -C build lint`` (build/build.ninja), ``cmake --build build --target lint`` (build/Makefile) — where
    ``make lint`` / ``make -C build lint`` are read.
G1  a path built from the git dir (``"$(git rev-parse --git-dir)/../tools/lint"``, ``--git-common-dir``, ``cd
    "$(git rev-parse --git-dir)/../tools" && ./lint``): ``_BUILT`` takes any leading expansion as the top or the
    hook's own directory, and ``.git/..`` from either is not ``tools``.
S1  a file's text given to a shell through an expansion: ``eval "$(cat lint)"``, ``sh -c "$(cat lint)"``, ``sh -s
    <<< "$(cat lint)"`` (only ``cat x | sh`` is read).
F1  a file given to a shell function as its argument (``check() { sh "$1"; }; check lint``).
C1  a directory spelled as bash reads it and the reader does not: ``cd -- tools`` (``--`` taken as the directory),
    ``~+/tools/lint`` (``~+`` is ``$PWD``).
A1  a git alias given on the command line: ``git -c alias.lint='!sh lint' lint``.
P1  an interpreter's code string naming its program with no ``/`` and no suffix: ``python3 -c 'import
    tools.check'`` (what ``python3 -m tools.check`` runs, which is read), ``python3 -c "exec(open('lint').read())"``.

Controls: the same files named as the reader reads them: refused or asked, nothing runs at the commit. Hooks and
payloads (which write a marker file only) travel as data: rt142_hook_spellings.json.
"""

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

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt142_hook_spellings.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
ATTACKS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")
TOOLS = ("awk", "cmake", "ninja", "nodejs", "perl5.36.0", "python3.11", "tclsh")


async def _commit_runs(workspace: Path, tmp_path: Path, case: str) -> tuple[bool, str]:
    return await case_runs(workspace, tmp_path, DATA, case, TOOLS)


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_script_named_as_the_reader_reads_it(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await _commit_runs(workspace, tmp_path, case)
    assert not ran, why


@pytest.mark.parametrize("case", ATTACKS)
async def test_attack_script_the_reader_does_not_name_runs_at_commit(
    workspace: Path, tmp_path: Path, case: str
) -> None:
    ran, why = await _commit_runs(workspace, tmp_path, case)
    assert not ran, why
