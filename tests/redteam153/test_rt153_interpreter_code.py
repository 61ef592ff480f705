"""Red team 153: files a git hook runs that the hook reader neither names, nor names by a pattern, nor counts whole,
because the interpreter gets its code or its module otherwise than the answers to red teams 146-151 read it. One
shell_exec command (the person declines every question) rewrites the file with no question; the user's next
``git commit``, outside the box, runs it.

F1  Code an interpreter reads from its standard input (a here-document ``python3 - <<'EOF'``, a here-string,
    ``echo … | python3``, ``perl <<'EOF'``): the modules it imports (``from tools.check import main``, Perl's
    ``use Check`` after ``use lib 'tools'``) are read only in ``-c``/``-e`` strings (``code_strings``), so
    ``tools/check.py`` / ``tools/Check.pm`` are unnamed.
F2  ``-m`` in a group of Python's short options (``python3 -Bm tools.check``, ``-Bmtools.check``): ``_MODULES``
    wants ``-m`` to start a word, and ``interpreter_files`` takes ``tools.check`` for a script path.
F3  Perl's lowercase ``-mCheck`` (load without import; on the line or in ``PERL5OPT``): ``_LOADED`` reads ``-M`` only,
    ``_MODULES`` takes it for a Python module (``Check.py``).
F4  A hook written in Python: a module given to a Python in an argument list (``[sys.executable, "-m",
    "tools.check"]``) or imported after the hook puts a directory on ``sys.path``.

Answered by class: the code an interpreter reads on its stdin (a here-document, a here-string, a pipe) read as the
code string it is (``hook_words._given_to_run``); Python's grouped flags (``-Bm``); Perl's ``-m`` as ``-M``; a hook
written in Python or Perl read for the modules it loads (``hook_interpreters.shebang_lines``), ``sys.path.insert`` as
a search path.

Controls: the same files named as the reader reads them (``-m`` alone, ``-c``/``-e`` code, ``-MCheck``): nothing
runs. Hooks and payloads (which write a marker file only) travel as data: rt153_interpreter_code.json.
"""

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

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt153_interpreter_code.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
ATTACKS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")
TOOLS = ("perl", "python3")


async def _git_runs(workspace: Path, tmp_path: Path, case: str) -> tuple[bool, str]:
    return await case_runs(workspace, tmp_path, DATA, case, TOOLS)


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_module_named_as_the_reader_reads_it(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await _git_runs(workspace, tmp_path, case)
    assert not ran, why


@pytest.mark.parametrize("case", ATTACKS)
async def test_attack_module_the_interpreter_loads_otherwise_runs_later(
    workspace: Path, tmp_path: Path, case: str
) -> None:
    ran, why = await _git_runs(workspace, tmp_path, case)
    assert not ran, why
