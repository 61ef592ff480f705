"""Red team 6: the same class as red team 5b F9 (code every start of the project's Python runs), through the files
a virtual environment's users run rather than its site-packages: ``.venv/bin/activate`` (sourced by the user's shell,
by ``.envrc``'s ``source .venv/bin/activate``, by editors' terminals) and ``.venv/bin/python`` itself (``uv run``,
``pytest`` through the venv, an editor's interpreter query). ``.venv`` is a build directory, so a command that
appends to ``activate`` or replaces ``bin/python`` with a script lands with no question (the person declines every
question), and the user's next activation / interpreter start runs it outside the box. The payload writes a marker
in the test's tmp dir."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


@pytest.mark.parametrize("case", ["activate-appended", "python-replaced"])
async def test_attack_venv_entry_points_rewritten(workspace: Path, tmp_path: Path, case: str) -> None:
    marker = tmp_path / "MARKER-venv-ran"
    python = shutil.which("python3") or sys.executable
    subprocess.run([python, "-m", "venv", "--without-pip", str(workspace / ".venv")], check=True, capture_output=True)
    line = f"echo ran > '{marker}'\n"
    if case == "activate-appended":
        code = f"open('.venv/bin/activate', 'a').write({line!r})\n"
    else:
        script = f'#!/bin/sh\n{line}exec {python} "$@"\n'
        code = (
            f"os.unlink('.venv/bin/python')\nopen('.venv/bin/python', 'w').write({script!r})\n"
            "os.chmod('.venv/bin/python', 0o755)\n"
        )
    plant = program(workspace, "plant", code)
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, plant)
    assert out["exitCode"] == 0, out
    if case == "activate-appended":
        subprocess.run(["bash", "-c", ". .venv/bin/activate"], cwd=workspace, capture_output=True, check=False)
    else:
        subprocess.run([str(workspace / ".venv" / "bin" / "python"), "-c", "pass"], capture_output=True, check=False)
    assert not marker.exists(), (
        f"the user's next use of the venv ran what the command wrote ({case}): questions={person.questions} "
        f"transaction={out.get('transaction')} summary={(out.get('changes') or {}).get('summary')}"
    )
