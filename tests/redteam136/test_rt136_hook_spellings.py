"""Red team 136 F1-F3, F5, F6: spellings by which a pre-commit hook runs a project file that ``hook_runs`` does not
name (or names only up to a bound it cuts at silently). The file is then not protected: one shell_exec command
(a person declines every question) rewrites or makes it with no question, and the user's next ``git commit``,
outside the box, runs it.

F1  a directory whose files the hook runs (``find scripts/hooks -name '*.sh' -exec sh {} \\;``, ``run-parts
    scripts/pre-commit.d``): ``_runs`` skips a word naming a directory (``os.path.isdir``), and names none of its
    files.
F2  a glob on a hook's line that is no include (``for f in scripts/checks/*.sh; do sh "$f"; done``): ``_expanded``
    keeps the pattern (``^``) only for an include, so a file made later that the glob matches is not protected;
    and it names only the first 64 matches (``_GLOB_MAX``), with no ``PART_READ``: the 65th on are not protected.
F3  a command line given to a shell or an interpreter as a string (``bash -c 'sh scripts/lint.sh'``, ``sh -c 'cd
    tools && sh ./lint.sh'``, ``node -e "require('./tools/check.js')"``): the string is one word, taken as a path
    (``cd tools && sh ./lint.sh``), never read as the command line it is.
F5  the directories a text runs from: ``_places`` keeps the first 32 (the top, the text's own and two for each
    ``cd``): in a monorepo hook doing ``(cd packages/pNN && sh ./lint.sh)`` for 20 packages, the 16th on are not
    read, silently (no ``PART_READ``); ``cd -P tools`` and ``env --chdir=tools`` are not taken as a change of
    directory at all.
F6  a hooks directory with more than 64 files: ``run_by_hooks`` reads the first 64 names (sorted) and drops the
    rest silently; a ``pre-commit`` sorted after them is never read.

Controls: the same scripts named plainly (by path, a glob's existing match, ``cd tools``, a few packages, a few
files beside the hook): the rewrite is refused or asked, and nothing runs at the commit. Hooks and payloads
(which write a marker file only) travel as data: rt136_hook_spellings.json.
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

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt136_hook_spellings.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
ATTACKS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")


def _files(spec: dict[str, Any]) -> dict[str, str]:
    files = {str(k): str(v) for k, v in spec["files"].items()}
    if "generated" in spec:
        made = spec["generated"]
        files.update({str(made["pattern"]).format(i=i): str(made["text"]) for i in range(int(made["count"]))})
    return files


def _hook(spec: dict[str, Any]) -> str:
    if "hook_generated" in spec:
        made = spec["hook_generated"]
        return "".join(str(made["line"]).format(i=i) for i in range(int(made["count"])))
    return str(spec["hook"])


async def _commit_runs(workspace: Path, tmp_path: Path, case: str) -> tuple[bool, str]:
    spec, marker = DATA["cases"][case], tmp_path / "MARKER-hook-ran"
    if (needs := {"run-parts": "run-parts", "node": "node"}.get(_hook(spec).split()[0])) and not shutil.which(needs):
        pytest.skip(f"{needs} is missing")
    payload = str(spec.get("payload", DATA["payload"])).replace("{marker}", str(marker))
    modes = {str(k): int(v) for k, v in spec.get("modes", {}).items()}
    return await commit_runs(workspace, marker, _hook(spec), _files(spec), str(spec["planted"]), payload, modes)


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_script_named_plainly_is_protected(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await _commit_runs(workspace, tmp_path, case)
    assert not ran, why


@pytest.mark.parametrize("case", ATTACKS)
async def test_attack_script_the_reader_does_not_name_runs_at_commit(
    workspace: Path, tmp_path: Path, case: str
) -> None:
    ran, why = await _commit_runs(workspace, tmp_path, case)
    assert not ran, why
