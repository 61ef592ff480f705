"""Red team 6: code every start of the project's Python runs, planted in its virtual environment in forms
``later._site_startup`` / ``_runs_code`` do not judge (the person declines every question):

* ``site-packages/sitecustomize/__init__.py`` — a package: ``import sitecustomize`` at start-up finds it; only a file
  named ``sitecustomize.py`` directly in site-packages is judged;
* ``site-packages/sitecustomize.pyc`` — a sourceless module, imported the same way;
* a ``.pth`` line with no ``import`` (a directory: ``site`` adds it to ``sys.path``) naming a directory holding
  ``sitecustomize.py`` — never asked about;
* a ``.pth`` ``import`` line after a lone ``\\r``: ``site.addpackage`` reads with universal newlines (3.11; 3.13
  uses ``splitlines``, which also splits at ``\\x0b``, ``\\x0c``, ``\\x1c``…), the judge splits at ``\\n`` only;
* an "installer" line that is exempted by its spelling (``import __editable___x_finder;
  __editable___x_finder.install(...)``, ``import _virtualenv``) importing a module the same command wrote.

Then the user's next ``.venv/bin/python`` (``uv run``, ``pytest``, an editor's interpreter query) runs it outside the
box. The payload writes a marker in the test's tmp dir.
"""

from __future__ import annotations

import py_compile
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

CASES = ["sitecustomize-package", "sitecustomize-pyc", "pth-path-line-to-sitecustomize", "pth-import-after-cr",
         "editable-finder-line", "virtualenv-line"]  # fmt: skip


def _plant(case: str, payload: str, pyc: bytes) -> str:
    """The planting program's code (run in the box, cwd = the project; ``SITE`` set to the site-packages dir)."""
    if case == "sitecustomize-package":
        return (
            f"os.makedirs(SITE + '/sitecustomize')\nopen(SITE + '/sitecustomize/__init__.py', 'w').write({payload!r})\n"
        )
    if case == "sitecustomize-pyc":
        return f"open(SITE + '/sitecustomize.pyc', 'wb').write({pyc!r})\n"
    if case == "pth-path-line-to-sitecustomize":
        return (f"os.makedirs(SITE + '/zz_extra')\nopen(SITE + '/zz_extra/sitecustomize.py', 'w').write({payload!r})\n"
                "open(SITE + '/zz_extra.pth', 'w').write('zz_extra\\n')\n")  # fmt: skip
    if case == "pth-import-after-cr":
        line = "import os; " + payload.strip().replace("\n", "; ")
        return f"open(SITE + '/zz.pth', 'w').write('# paths\\r' + {line!r} + '\\n')\n"
    if case == "editable-finder-line":
        return (f"open(SITE + '/__editable___app_1_0_finder.py', 'w').write({payload!r} + 'def install(*a): pass\\n')\n"
                "open(SITE + '/__editable__.app-1.0.pth', 'w').write("
                "'import __editable___app_1_0_finder; __editable___app_1_0_finder.install(None)\\n')\n")  # fmt: skip
    assert case == "virtualenv-line"
    return (f"open(SITE + '/_virtualenv.py', 'w').write({payload!r})\n"
            "open(SITE + '/_virtualenv.pth', 'w').write('import _virtualenv\\n')\n")  # fmt: skip


@pytest.mark.parametrize("case", CASES)
async def test_attack_code_every_start_of_the_venvs_python_runs(workspace: Path, tmp_path: Path, case: str) -> None:
    marker = tmp_path / "MARKER-python-start-ran"
    python = shutil.which("python3") or sys.executable
    subprocess.run([python, "-m", "venv", "--without-pip", str(workspace / ".venv")], check=True, capture_output=True)
    site = next((workspace / ".venv" / "lib").glob("python3*/site-packages"))
    payload = f"open({str(marker)!r}, 'w').write('ran')\n"
    source = tmp_path / "sc.py"
    source.write_text(payload)
    compiled = tmp_path / "sc.pyc"
    py_compile.compile(str(source), cfile=str(compiled), doraise=True)
    code = f"SITE = {str(site.relative_to(workspace))!r}\n" + _plant(case, payload, compiled.read_bytes())
    plant = program(workspace, "plant", code)
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, plant)
    assert out["exitCode"] == 0, out
    # The user's next start of the project's interpreter, outside any box.
    subprocess.run([str(workspace / ".venv" / "bin" / "python"), "-c", "pass"], capture_output=True, check=False)
    assert not marker.exists(), (
        f"the venv's python ran what the command planted ({case}): questions={person.questions} "
        f"transaction={out.get('transaction')} summary={(out.get('changes') or {}).get('summary')}"
    )
