"""Red team 138: shell spellings by which a pre-commit hook runs a project file that ``hook_runs`` does not name
(nor counts whole, ``PART_READ``, nor names by a pattern). The file is not protected: one shell_exec command (the
person declines every question) rewrites it with no question, and the user's next ``git commit``, outside the box,
runs it.

F1  a program run inside a command substitution that is one word to ``shlex`` (``out=$(./scripts/lint.sh)``,
    ``eval "$(./scripts/env.sh)"``, backticks): the word holds ``=`` (``program_words`` drops it) or starts with
    ``$`` and ``_BUILT`` wants a ``/`` after the ``)``: nothing is named.
F2  the directory a text changes to, read by ``_CHANGES_DIR``'s ``(\\S+)``: ``cd tools; ./lint.sh`` and ``(cd tools;
    sh lint.sh)`` take ``tools;`` as the directory; ``cd "$(git rev-parse --show-toplevel)/tools"`` takes
    ``"$(git``; ``cd "dev tools"`` takes ``dev``; ``cd "$TOOLS"`` is never expanded with the text's own values.
F3  a path held in a variable not given on a line of its own (``LINT=scripts/lint.sh; sh "$LINT"``, a bash array,
    ``for c in lint fmt; do sh "scripts/checks/$c"; done`` — whose name is a variable, so ``_expanded`` names
    nothing and nothing counts whole).
F4  a runner's operand moved off the runner: ``sh -o nounset lint`` (the option's value is taken as the script),
    ``sh \\`` + newline + ``lint`` (a continued line read as two).
F5  other ways a shell is given a file: ``BASH_ENV=scripts/env.sh bash -c true`` (a word with ``=`` dropped),
    an alias (``alias check='sh scripts/lint.sh'``), ``cat lint | sh``.

Controls: the same scripts named as the reader reads them (``./scripts/lint.sh``, ``$(sh scripts/lint.sh)``,
``cd tools && ./lint.sh``, a variable on its own line, ``sh -e lint``): the rewrite is refused or asked, and
nothing runs at the commit. Hooks and payloads (which write a marker file only) travel as data:
rt138_hook_spellings.json.
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
]

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt138_hook_spellings.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
ATTACKS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")


async def _commit_runs(workspace: Path, tmp_path: Path, case: str) -> tuple[bool, str]:
    spec, marker = DATA["cases"][case], tmp_path / "MARKER-hook-ran"
    payload = str(spec.get("payload", DATA["payload"])).replace("{marker}", str(marker))
    modes = {str(k): int(v) for k, v in spec.get("modes", {}).items()}
    files = {str(k): str(v) for k, v in spec["files"].items()}
    shebang = str(spec.get("shebang", "#!/bin/sh"))
    return await commit_runs(workspace, marker, str(spec["hook"]), files, str(spec["planted"]), payload, modes, shebang)


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
