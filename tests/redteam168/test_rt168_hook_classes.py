"""Red team 168: what a file a hook runs runs in turn, where the hook hands the file to a shell by a spelling the
reader does not read it through.

F1: a directory a line runs every file of (``run-parts .githooks/pre-commit.d``, ``find dir -type f -exec {} ;``)
counts whole (red team 162 F2), but its files are never read for what *they* run: ``10-lint`` (``#!/bin/sh``)
running ``scripts/lint-check`` leaves ``scripts/lint-check`` a plain file a command may rewrite with no question.

F2: a file whose name has a dot, handed to a shell other than as ``sh x`` / ``. x`` (``eval "$(cat x.conf)"``,
``source <(cat x.conf)``, ``bash -c 'source "$1"' _ x.conf``, ``for f in d/*.conf; do . "$f"; done``, ``find d
-name '*.hook' -exec sh {} ;``, ``sh -c "$(cat x.conf)"``) is protected itself but not read as shell (red team 165
F2 answered ``sh x.hook`` and ``. ./x.conf`` only), so the program it runs is not protected.

Hooks and payloads travel as data (rt168_hook_classes.json); payloads write a marker file only. Each case: a
repository whose hook works, one shell_exec command (the person declines every question) rewriting the program the
second-level text runs, then the user's next ``git commit`` outside the box — the marker must not appear.
Controls: ``sh x.hook`` and a loop over ``*.sh`` files — refused, nothing runs.

Answered (as classes): a text with no ``#!`` line is read as shell unless its suffix is another language's or a
structured format's (``hook_interpreters.shell_text``), and the files of a directory a line runs whole are read for
what they run in turn (``hook_interpreters.files_in``, 64 at most)."""

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

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt168_hook_classes.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
ATTACKS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_what_a_read_text_runs_is_protected(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case, tools=("run-parts",))
    assert not ran, why


@pytest.mark.parametrize("case", ATTACKS)
async def test_attack_what_an_unread_text_runs_runs_later(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case, tools=("run-parts",))
    assert not ran, why
