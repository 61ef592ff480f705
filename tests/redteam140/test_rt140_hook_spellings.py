"""Red team 140: ways a pre-commit hook runs a project file that ``hook_runs`` (lines and bash's grammar) neither
names, nor names by a pattern, nor counts whole (``PART_READ``). One shell_exec command (the person declines every
question) rewrites the file with no question; the user's next ``git commit``, outside the box, runs it.

F1  PATH put first by the hook in a spelling ``path_dirs`` does not read, then a program run by its name alone:
    ``PATH+=":$PWD/tools"``, ``PATH="$(git rev-parse --show-toplevel)/tools:$PATH"``, ``$(dirname "$0")/../..``,
    PATH set in a file the hook sources, or by a hook of a ``core.hooksPath`` directory (``path_dirs`` reads only
    ``.git/hooks``, ``.husky``, ``.husky/_``): ``tools/lint`` is not named (``_on_path`` never sees ``tools``).
    And in the spelling it reads (``PATH="$PWD/tools:$PATH"``), a program not there yet that the hook runs when
    present (``command -v lint && lint``): ``_on_path`` names only files that exist, and ``_shadows`` asks only
    about a system program's name.
F2  a parameter expansion with a default (``"${LINT:-./scripts/lint.sh}"``, ``${LINT-scripts/lint.sh}``): the word
    starts with ``$``, ``_LEFT`` takes all of it as a variable and ``_expanded`` names nothing.
F3  shell code given as a string to something other than ``sh -c``: ``trap 'sh scripts/cleanup.sh' EXIT``, ``flock
    LOCK -c '…'`` (``code_strings`` reads only shells' and interpreters' ``-c``).
F4  an interpreter's file moved off the runner: ``node --import=./x.mjs`` / ``--require=./x.js`` (a word with ``=``
    is dropped), ``python3 -W ignore check`` (an option's value taken as the operand), ``python3 tools`` (a
    directory run through its ``__main__.py``).
F5  a shell given a file otherwise: a descriptor (``exec 3<f; sh <&3``), brace expansion
    (``scripts/{lint,fmt}``).

Controls: the same files named as the reader reads them: refused or asked, nothing runs at the commit. Hooks and
payloads (which write a marker file only) travel as data: rt140_hook_spellings.json.
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

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt140_hook_spellings.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
ATTACKS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")


async def _commit_runs(workspace: Path, tmp_path: Path, case: str) -> tuple[bool, str]:
    return await case_runs(workspace, tmp_path, DATA, case)


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
