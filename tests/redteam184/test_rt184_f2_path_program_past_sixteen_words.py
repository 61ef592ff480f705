"""Red team 184 F2: a program a hook names alone, found on a PATH directory a file the hook sources sets, is looked
for only if its name is among the first 16 (sorted) words of every text the reader read.

``hook_runs.run_by_hooks`` ends with ``on_path(sorted(bins.words), bins.dirs)`` ("a PATH set by a text read later":
red team 140 F1), and ``hook_words.on_path`` takes ``list(words)[:16]`` before it drops the words that are no program
names (``"$branch"``, ``=``, ``[``, ``-e``, ``./env.sh`` …). A hook of ordinary length (``set -e``, an ``echo``, a
branch test, ``git diff --cached … || exit 0``) fills those 16 with other words, so ``lint`` — which the hook runs from
``tools/``, put first on PATH by the ``env.sh`` it sources — is never looked for there: ``tools/lint`` is rewritten (or
``tools/verify-staged`` made) by a command with no question, and the user's next ``git commit`` runs it outside the
box. Not a regression of HEAD (HEAD~1 the same); a bound applied before the filter it bounds.

Control: the same two lines alone (``. ./env.sh``, ``lint``) have ``tools/lint`` protected (the command is refused).
Hooks and payloads travel as data (rt184_path_cases.json); payloads write a marker file only. The person declines
every question after the command ran."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from support.hook_cases import case_runs

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap missing")]

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt184_path_cases.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
ATTACKS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_program_on_sourced_path_is_protected(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case)
    assert not ran, why


@pytest.mark.parametrize("case", ATTACKS)
async def test_attack_program_on_sourced_path_past_sixteen_words_lands_unasked(
    workspace: Path, tmp_path: Path, case: str
) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case)
    assert not ran, why
