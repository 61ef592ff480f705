"""Red team 155 F2: a hook naming a script by a path that is not UTF-8 (a Latin-1 project: ``sh
scripts/lint-\\xe9t\\xe9.sh``). The hook reader decodes every text with ``errors="replace"``
(``hook_runs._read``, ``hook_configs.read_regular``), so the name it looks up holds U+FFFD where the file's name
holds the byte 0xE9: it names a file that is not there, and the script the hook runs is neither named nor counted.
One shell_exec command (the person declines every question) rewrites it with no question; the user's next ``git
commit``, outside the box, runs it. (Read with ``surrogateescape``, as ``os.fsdecode`` gives names, the name would
match.)

Answered: hook texts, rc files and config texts are read with ``surrogateescape``.

Control: the same hook and script with a UTF-8 name (``lint-été.sh``): refused, nothing runs. Hooks and names
travel as data (rt155_undecodable_names.json, lone surrogates standing for the bytes); the payload writes a marker
file only (``support.planted.sh_payload``).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from support.planted import git, landed, plant, sh_payload

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing"),
]

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt155_undecodable_names.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
ATTACKS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")


async def _runs(workspace: Path, tmp_path: Path, case: str) -> tuple[bool, str]:
    spec = DATA["cases"][case]
    marker = tmp_path / "MARKER-hook-ran"
    script = os.path.join(os.fsencode(workspace), os.fsencode(str(spec["script"])))
    os.makedirs(os.path.dirname(script), exist_ok=True)
    with open(script, "wb") as f:
        f.write(b"#!/bin/sh\ntrue\n")
    os.chmod(script, 0o755)
    git(workspace, "init", "-q")
    hook = workspace / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_bytes(os.fsencode(str(spec["hook"])))
    hook.chmod(0o755)
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "--no-verify", "-m", "init")
    git(workspace, "commit", "-q", "--allow-empty", "-m", "works before")
    assert not marker.exists()
    person, out = await plant(workspace, {str(spec["script"]): sh_payload(marker)})
    git(workspace, "commit", "-q", "--allow-empty", "-m", "next")
    why = (f"{spec['script']!r} (run by the user's git) landed with no question: questions={person.questions} "
           f"transaction={out.get('transaction')} landed={landed(out)}")  # fmt: skip
    return marker.exists(), why


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_a_utf8_name_the_hook_runs_is_protected(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await _runs(workspace, tmp_path, case)
    assert not ran, why


@pytest.mark.parametrize("case", ATTACKS)
async def test_attack_a_name_that_is_not_utf8_runs_later(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await _runs(workspace, tmp_path, case)
    assert not ran, why
