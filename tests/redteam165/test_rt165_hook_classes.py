"""Red team 165: a file a hook runs is read for what *it* runs only when it looks like shell by its name's suffix or a
bare ``#!…sh`` first line (``hook_runs._shell_text``). A script the hook runs whose ``#!`` line carries an option
(``#!/bin/bash -e``, ``#!/bin/sh -eu``, ``#!/usr/bin/env -S bash -e``: F1), a file the hook hands a shell by name
whose name has a dot (``. ./scripts/hooks.conf``, ``sh scripts/pre-commit.hook``, ``bash ci/pre-commit.v2``: F2), or
a make script (``#!/usr/bin/make -f``: F3) is protected itself but never read, so the program *it* runs is not.

Hooks and payloads travel as data (rt165_hook_classes.json); payloads write a marker file only. Each case: a
repository whose hook works, one shell_exec command (the person declines every question) rewriting the program the
second-level script runs, then the user's next ``git commit`` outside the box — the marker must not appear.
Controls: the same layout with a plain ``#!/bin/bash`` line, or a sourced file named ``*.sh`` — refused.

Answered (as classes): a file a shell runs or sources is read as shell whatever its name (``sh x.hook``,
``. ./x.conf``),
and a text's ``#!`` line decides by its program with options dropped and ``env -S`` split (``hook_runs._shell_text``,
``hook_interpreters.shebang_program``); a ``#!`` make script is read for its recipes."""

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

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt165_hook_classes.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
ATTACKS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_what_a_read_script_runs_is_protected(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case, tools=("make",))
    assert not ran, why


@pytest.mark.parametrize("case", ATTACKS)
async def test_attack_what_an_unread_script_runs_runs_later(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case, tools=("make",))
    assert not ran, why
