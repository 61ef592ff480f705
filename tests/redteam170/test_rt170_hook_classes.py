"""Red team 170: a program a git hook runs, named by a spelling the shell expands but the hook reader does not.

F1: a pattern the shell expands in the *program's* place — a glob as the command word (``scripts/lint-chec[k]``,
``scripts/lint-che?k``, ``true && tools/lint-chec[k]``, ``tool?/lint-check``, ``cd tool? && ./lint-check``;
``_named`` skips a glob unless a runner or a loop comes before it: "a glob a tool is given") or a brace sequence
(``scripts/check{1..3}``; ``{a,b}`` lists are read, ``{1..3}`` ranges are not).

F2: a path climbing with ``..`` from a place the reader does not name: ``"$(dirname "$GIT_INDEX_FILE")/../x"`` (git
gives every hook GIT_INDEX_FILE; the ``)/`` rule takes ``../x`` from the top and the hook's directory, never from
``.git``), ``cd "$(dirname "$0")/../tools" && ./x`` (a ``cd`` from the hook's own directory: ``_CHANGES_DIR`` cuts the
quoted operand at the inner quote), ``cd "$(git rev-parse --show-cdup)tools"``.

F3: a variable's static value given to a parameter expansion's operator (``${x%.disabled}``, ``${x/X/e}``,
``${x,,}``), split at a changed IFS, or set by ``printf -v``: the reader names the value as written, not as used.

F4: the places bash's ``cd`` and tilde know: ``CDPATH=scripts cd hooks``, ``~-/x`` (OLDPWD).

Hooks and payloads travel as data (rt170_hook_classes.json); payloads write a marker file only. Each case: a
repository whose hook works, one shell_exec command (the person declines every question) rewriting the program,
then the user's next ``git commit`` outside the box — the marker must not appear.
Controls: the plain path, a ``{a,b}`` list, a ``${X:-default}`` — refused, nothing runs.

Answered (as classes): a word is named as bash makes it — a glob where the program's name goes as a pattern, a glob a
line changes to as a place (a pattern too), brace sequences, a parameter's operators, ``printf -v`` and ``IFS``
(``shell_words``), git's directory by ``$GIT_DIR`` and ``$(dirname "$GIT_INDEX_FILE")``, the text's own directory in
any word (``cd "$(dirname "$0")/../tools"``), ``$(git rev-parse --show-cdup)``, ``~-`` and ``CDPATH``."""

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

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt170_hook_classes.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
ATTACKS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_a_named_program_is_protected(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case)
    assert not ran, why


@pytest.mark.parametrize("case", ATTACKS)
async def test_attack_a_program_by_an_unread_spelling_runs_later(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case)
    assert not ran, why
