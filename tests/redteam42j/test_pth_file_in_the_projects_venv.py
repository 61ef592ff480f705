"""Red team 5b: a ``.pth`` file planted in the project's virtual environment runs at every start of its Python.

``~/.local/lib/python*/site-packages/**`` is protected (a ``.pth`` line starting with ``import`` is executed by every
Python start), but the project's own ``.venv`` is a scratch directory: a command that adds
``.venv/lib/pythonX.Y/site-packages/zz.pth`` lands with no question (the person declines everything), and the very
next start of that interpreter — ``uv run``, ``pytest``, the user's shell with the venv active, or an editor's Python
extension that queries the selected interpreter when the folder opens — runs it outside the box. The payload writes a
marker in the test's tmp dir.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


async def test_attack_pth_planted_in_the_projects_venv(workspace: Path, tmp_path: Path) -> None:
    marker = tmp_path / "MARKER-pth-ran"
    python = shutil.which("python3") or sys.executable
    subprocess.run([python, "-m", "venv", "--without-pip", str(workspace / ".venv")], check=True, capture_output=True)
    site = next((workspace / ".venv" / "lib").glob("python3*/site-packages"))
    rel = site.relative_to(workspace)
    line = f"import os; open({str(marker)!r}, 'w').write('ran')\n"
    plant = program(workspace, "plant", f"open('{rel}/zz.pth', 'w').write({line!r})\n")
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, plant)
    # The user's next use of the project's interpreter, outside any box.
    subprocess.run([str(workspace / ".venv" / "bin" / "python"), "-c", "pass"], capture_output=True, check=False)
    assert not marker.exists(), (
        f"the venv's python ran the planted .pth: questions={person.questions} "
        f"transaction={out.get('transaction')} summary={(out.get('changes') or {}).get('summary')}"
    )
