"""Red team 142: ways a pre-commit hook runs a project file that ``hook_runs`` (lines and bash's grammar) neither
names, nor names by a pattern, nor counts whole (``PART_READ``). One shell_exec command (the person declines every
question) rewrites the file with no question; the user's next ``git commit``, outside the box, runs it.

I1  an interpreter named with its version or its distribution's name (``python3.11 check``, ``/usr/bin/python3.11
    check``, ``nodejs check``, ``perl5.36.0 check``): ``_RUNNERS`` holds ``python3``, ``node``, ``perl`` only (the
    code-string reader strips digits, the operand reader does not).
I2  an interpreter not in ``_RUNNERS`` given its program file by a name with no ``/`` and no listed suffix
    (``awk -f check.awk``, ``tclsh check.tcl``, ``cmake -P check.cmake``).
T1  a build tool that runs what its recipe file says, not in ``_RECIPE_FILES``: ``ninja lint`` (build.ninja),
    ``ninja -C build lint`` (build/build.ninja), ``cmake --build build --target lint`` (build/Makefile) — where
    ``make lint`` / ``make -C build lint`` are read.
G1  a path built from the git dir (``"$(git rev-parse --git-dir)/../tools/lint"``, ``--git-common-dir``, ``cd
    "$(git rev-parse --git-dir)/../tools" && ./lint``): ``_BUILT`` takes any leading expansion as the top or the
    hook's own directory, and ``.git/..`` from either is not ``tools``.
S1  a file's text given to a shell through an expansion: ``eval "$(cat lint)"``, ``sh -c "$(cat lint)"``, ``sh -s
    <<< "$(cat lint)"`` (only ``cat x | sh`` is read).
F1  a file given to a shell function as its argument (``check() { sh "$1"; }; check lint``).
C1  a directory spelled as bash reads it and the reader does not: ``cd -- tools`` (``--`` taken as the directory),
    ``~+/tools/lint`` (``~+`` is ``$PWD``).
A1  a git alias given on the command line: ``git -c alias.lint='!sh lint' lint``.
P1  an interpreter's code string naming its program with no ``/`` and no suffix: ``python3 -c 'import
    tools.check'`` (what ``python3 -m tools.check`` runs, which is read), ``python3 -c "exec(open('lint').read())"``.

Controls: the same files named as the reader reads them: refused or asked, nothing runs at the commit. Hooks and
payloads (which write a marker file only) travel as data: rt142_hook_spellings.json.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.planted import git, landed, plant

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing"),
]

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt142_hook_spellings.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
ATTACKS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")
TOOLS = {"nodejs", "perl5.36.0", "awk", "tclsh", "cmake", "ninja", "python3.11"}


def _needs(spec: dict[str, Any]) -> list[str]:
    words = str(spec["hook"]).split() + [str(w) for w in spec.get("configure", [])]
    return [w for w in words if w.rpartition("/")[2] in TOOLS and shutil.which(w) is None]


def _repo(workspace: Path, spec: dict[str, Any]) -> None:
    modes = {str(k): int(v) for k, v in spec.get("modes", {}).items()}
    for name, text in spec["files"].items():
        path = workspace / str(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(str(text))
        if name in modes:
            path.chmod(modes[name])
    git(workspace, "init", "-q")
    for key, value in spec.get("config", {}).items():
        git(workspace, "config", str(key), str(value))
    hooks = workspace / str(spec.get("hooks_dir", ".git/hooks"))
    hooks.mkdir(parents=True, exist_ok=True)
    hook = hooks / "pre-commit"
    hook.write_text(f"{spec.get('shebang', '#!/bin/sh')}\n{spec['hook']}\n")
    hook.chmod(0o755)
    if "configure" in spec:  # (a build tree the user made: ``cmake -S . -B build``)
        subprocess.run([str(w) for w in spec["configure"]], cwd=workspace, check=True, capture_output=True)
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "--no-verify", "-m", "init")


async def _commit_runs(workspace: Path, tmp_path: Path, case: str) -> tuple[bool, str]:
    spec, marker = DATA["cases"][case], tmp_path / "MARKER-hook-ran"
    if missing := _needs(spec):
        pytest.skip(f"not installed: {missing}")
    payload = str(spec.get("payload", DATA["payload"])).replace("{marker}", str(marker))
    _repo(workspace, spec)
    git(workspace, "commit", "-q", "--allow-empty", "-m", "hook works before")
    assert not marker.exists()
    person, out = await plant(workspace, {str(spec["planted"]): payload})
    git(workspace, "commit", "-q", "--allow-empty", "-m", "next")  # the user's next commit, outside the box
    why = (f"{spec['planted']} (run by the hook) landed with no question: questions={person.questions} "
           f"transaction={out.get('transaction')} landed={landed(out)}")  # fmt: skip
    return marker.exists(), why


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
