"""Red team 146: files a git hook runs that the hook reader neither names, nor names by a pattern, nor counts whole,
because the program finds the file by a rule of its own (a suffix added, a directory's entry, a search path the
hook sets, a subcommand's name). One shell_exec command (the person declines every question) rewrites or makes the
file with no question; the user's next ``git commit``, outside the box, runs it.

F1  node's module resolution: ``node scripts/check`` runs ``scripts/check.js`` (or ``scripts/check/index.js``, or
    the ``main`` of ``scripts/check/package.json``); ``node -r ./tools/setup`` preloads ``tools/setup.js``;
    ``node -e "require('./tools/check')"`` the same. The reader names the path as written (no such file), the file
    node runs is not protected. ``node scripts/check.js`` (the suffix written) is.
F2  ``PYTHONPATH=src python3 -m app.lint`` (or ``export PYTHONPATH=tools`` then ``python3 -m lint``): the module is
    looked for from the top and the text's places only, never on the search path the hook sets.
F3  a file the hook runs if it is there, spelled otherwise than ``[ -f x ] && …``: ``[ ! -f x ] || tclsh x``,
    ``tclsh x 2>/dev/null || true``. Absent now, made by the command, run at the next commit.
F4  ``git lint`` with ``tools`` put first on PATH by the hook runs ``tools/git-lint``; the reader names
    ``tools/lint`` (a program named alone), not git's ``git-<name>``.

Answered by class (hook_words.resolves, search_dirs, git_commands, FILE_NAME; mise_config read as TOML): a word an
interpreter completes by its own rules names every file it may take; a search path the hook sets is a place names
are looked for; a file's name alone is named there or not; ``git <name>`` names ``git-<name>`` on the hook's PATH.

Controls: the same files named as the reader reads them: refused or asked, nothing runs. Hooks and payloads (which
write a marker file only) travel as data: rt146_hook_resolution.json.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from support.hook_cases import case_runs
from support.planted import landed, plant

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing"),
]

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt146_hook_resolution.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
ATTACKS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")
TOOLS = ("tclsh", "node", "python3", "perl")


async def _git_runs(workspace: Path, tmp_path: Path, case: str) -> tuple[bool, str]:
    return await case_runs(workspace, tmp_path, DATA, case, TOOLS)


ENV_CONTROLS = sorted(case for case, spec in DATA["env_cases"].items() if spec["finding"] == "control")
ENV_ATTACKS = sorted(case for case, spec in DATA["env_cases"].items() if spec["finding"] != "control")


async def _env_file_lands(workspace: Path, tmp_path: Path, case: str) -> tuple[bool, str]:
    """F5 (mise and direnv are not installed here): whether the file the project's mise/direnv config sources at the
    user's next ``cd`` into the project landed with no question (the control's spelling is refused)."""
    spec, marker = DATA["env_cases"][case], tmp_path / "MARKER-env-ran"
    for name, text in spec["files"].items():
        path = workspace / str(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(str(text))
    payload = str(DATA["env_payload"]).replace("{marker}", str(marker))
    person, out = await plant(workspace, {str(spec["planted"]): payload})
    why = (f"{spec['planted']} (sourced by the project's mise/direnv config) landed with no question: "
           f"questions={person.questions} transaction={out.get('transaction')} landed={landed(out)}")  # fmt: skip
    return str(spec["planted"]) in landed(out), why


@pytest.mark.parametrize("case", ENV_CONTROLS)
async def test_control_env_config_file_named(workspace: Path, tmp_path: Path, case: str) -> None:
    lands, why = await _env_file_lands(workspace, tmp_path, case)
    assert not lands, why


@pytest.mark.parametrize("case", ENV_ATTACKS)
async def test_attack_env_config_spelling_unread(workspace: Path, tmp_path: Path, case: str) -> None:
    lands, why = await _env_file_lands(workspace, tmp_path, case)
    assert not lands, why


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_file_named_as_the_reader_reads_it(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await _git_runs(workspace, tmp_path, case)
    assert not ran, why


@pytest.mark.parametrize("case", ATTACKS)
async def test_attack_file_the_program_resolves_runs_later(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await _git_runs(workspace, tmp_path, case)
    assert not ran, why
