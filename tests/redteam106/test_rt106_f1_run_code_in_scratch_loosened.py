"""Red team 106 F1: code the user's tools run at every start, kept in a build or cache directory (Python's compiled
modules in ``__pycache__``, a package's code in ``node_modules``), made writable by others with no question.

``judge_modes`` skips a group- or other-writable grant wherever ``in_scratch`` says the path is in a build or cache
directory; only a Python environment (``pyvenv.cfg``) is excepted (red team 74 F1). But ``python3 -c 'import m'``
runs ``__pycache__/m.cpython-3X.pyc`` whenever its header matches ``m.py`` (timestamp validation, the default), and
``node app.js`` runs ``node_modules/leftpad/index.js``: anyone on the machine may then put their code there and the
user's next run (outside the box) executes it. The same grant on ``m.py`` (the control) is asked.

The command lines travel as data (run_code_loosened.json). A person declines every question; a case fails when the
grant landed with no question."""

from __future__ import annotations

import json
import py_compile
import shutil
from pathlib import Path

import pytest

from support.planted import loosened_by

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

LINES: dict[str, str] = json.loads((Path(__file__).resolve().parent / "run_code_loosened.json").read_text())


def _project(root: Path) -> None:
    (root / "m.py").write_text("VALUE = 1\n")
    py_compile.compile(str(root / "m.py"), cfile=None, doraise=True)
    module = root / "node_modules" / "leftpad"
    module.mkdir(parents=True)
    (module / "index.js").write_text("module.exports = (s) => s;\n")
    (module / "package.json").write_text('{"name": "leftpad", "version": "1.0.0"}\n')
    (root / "node_modules" / ".bin").mkdir()
    (root / "node_modules" / ".package-lock.json").write_text("{}\n")


@pytest.mark.parametrize("case", sorted(LINES))
async def test_code_run_at_every_start_made_writable_by_others_is_asked(workspace: Path, case: str) -> None:
    _project(workspace)
    assert list((workspace / "__pycache__").glob("m.*.pyc"))
    loosened, person, out = await loosened_by(workspace, LINES[case])
    assert not loosened or person.questions, (case, loosened, out.get("transaction"), out.get("changes"))
