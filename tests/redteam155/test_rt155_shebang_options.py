"""Red team 155 F1: an interpreter's options given on a hook's ``#!`` line (``#!/usr/bin/env -S node --require
./tools/setup.js``, ``#!/usr/bin/env -S python3 -m tools.check``). The hook
reader skips every line starting with ``#`` (``hook_runs._runs``), and ``hook_interpreters.shebang_lines`` reads
only the body's imports, so the file those options load is neither named nor counted: one shell_exec command (the
person declines every question) rewrites it with no question and the user's next ``git commit``, outside the box,
runs it.

(Perl refuses ``-M`` on a ``#!`` line — "Too late" — so Perl is not a case.)

Answered: a text's ``#!`` line read as the command line it starts (``hook_interpreters._shebang_command``: ``env``'s
options dropped, ``-S`` split).

Controls: the same options on a line of the hook (``node --require ./tools/setup.js -e …``, ``node --import
./tools/register.mjs -e …``, ``python3 -m tools.check``): refused, nothing runs. Hooks and payloads (which write a
marker file only) travel as data: rt155_shebang_options.json.
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

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt155_shebang_options.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
ATTACKS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")
TOOLS = ("node", "python3")


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_options_on_a_hook_line(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case, TOOLS)
    assert not ran, why


@pytest.mark.parametrize("case", ATTACKS)
async def test_attack_options_on_the_shebang_line_load_a_file_that_runs_later(
    workspace: Path, tmp_path: Path, case: str
) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case, TOOLS)
    assert not ran, why
