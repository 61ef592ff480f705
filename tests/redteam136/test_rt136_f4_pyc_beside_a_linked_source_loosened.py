"""Red team 136 F4: ``refusals._as_its_source`` lets a group/other write grant on a ``__pycache__/*.pyc`` in a
build directory through when it adds no bit beyond its source's mode, read with ``lstat``. A source that is a
symbolic link has mode 0777 to ``lstat``: any grant on the compiled file then "has its source's mode". One command
puts a link in place of the built source (``build/lib/pkg/mod.py -> ../../../src/pkg/mod.py``, same text: a build
directory's files land unasked), a second makes ``build/lib/pkg/__pycache__/mod.cpython-311.pyc`` 0666 with no
question: anyone on the machine may then write the byte code the user's next import from ``build/lib`` runs.

Control: the same ``chmod 666`` with the built source a regular 0644 file is asked (and, declined, does not land).
Command lines travel as data (rt136_pyc_link.json); a person declines every question."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest

from support.boxed import Person, run, shell
from support.planted import written

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

LINES: dict[str, str] = json.loads((Path(__file__).resolve().parent / "rt136_pyc_link.json").read_text())
PYC = "build/lib/pkg/__pycache__/mod.cpython-311.pyc"
FILES: dict[str, bytes] = {
    "src/pkg/__init__.py": b"",
    "src/pkg/mod.py": b"VALUE = 1\n",
    "build/lib/pkg/__init__.py": b"",
    "build/lib/pkg/mod.py": b"VALUE = 1\n",
    PYC: b"\xa7\r\r\n" + b"\0" * 12,
}


def _project(root: Path) -> None:
    written(root, FILES)


def _loosened(root: Path) -> bool:
    return bool(stat.S_IMODE((root / PYC).lstat().st_mode) & 0o022)


async def test_control_pyc_loosened_beside_a_regular_source_is_asked(workspace: Path) -> None:
    _project(workspace)
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, LINES["loosen_pyc"], cwd=str(workspace))
    assert person.questions, out.get("changes")
    assert not _loosened(workspace), out.get("changes")


async def test_attack_pyc_loosened_beside_a_linked_source_lands_unasked(workspace: Path) -> None:
    _project(workspace)
    person = Person(False)
    async with shell(workspace, person) as client:
        first = await run(client, LINES["link_source"], cwd=str(workspace))
        assert (workspace / "build/lib/pkg/mod.py").is_symlink(), first.get("changes")
        out = await run(client, LINES["loosen_pyc_in_place_of_a_link"], cwd=str(workspace))
    assert not _loosened(workspace) or person.questions, (person.questions, out.get("changes"))
