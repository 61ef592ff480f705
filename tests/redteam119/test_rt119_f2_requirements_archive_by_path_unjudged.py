"""Red team 119 F2: a requirements file naming a wheel or an sdist by its path (``vendor/evil-1.0-py3-none-any.whl``,
``./vendor/evil-1.0.tar.gz``) is not judged — the next ``pip install -r requirements.txt`` installs the archive the
model wrote.

``package_sources.requirements_sources`` keeps a requirements file's index options, its ``-r``/``-c`` of files of
other names and its requirements "from a url" (``DIRECT``: a ``scheme://``, ``git+``, ``file:``). pip also takes a
line that is a path to an archive as a requirement (``install_req_from_line``: ``_looks_like_path``/
``is_archive_file`` → a ``file:`` link), with no url and no ``name @``. The archive's contents are never judged (a
new ``.whl`` is an unrelated build output): a wheel's ``.pth`` runs at every start of that Python, an sdist's
``setup.py`` at the install. The product judges the same choice everywhere else — an archive by its path in a
manifest (``FETCHED``: ``{ path = "x.whl" }``), an npm ``./x.tgz``, a lock's ``file:x.tgz``.

Checked by hand (scratch/verify_pip.py in the notes): a ``requirements.txt`` holding only
``vendor/evil-1.0-py3-none-any.whl`` made ``pip install -r requirements.txt`` install it (offline), and the wheel's
``.pth`` ran at the next ``python -c pass``.

Each change lands unasked from shell_exec (a person declining everything) and file_write writes it. Controls: the
same wheel named ``evil @ file:vendor/…`` in the requirements file, or by ``path`` in ``[tool.uv.sources]``, is
asked and refused. Texts travel as data (requirements_archives.json)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from support import serve
from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio]

CASES: dict[str, dict[str, Any]] = json.loads(
    (Path(__file__).resolve().parent / "requirements_archives.json").read_text()
)["cases"]


def _set_up(workspace: Path, case: dict[str, Any]) -> Path:
    path = workspace / str(case["path"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(str(case["before"]))
    return path


@pytest.mark.parametrize("name", sorted(CASES))
async def test_file_write_refuses_an_archive_by_path(workspace: Path, name: str) -> None:
    case = CASES[name]
    path = _set_up(workspace, case)
    async with serve("mcp-server-file-write", workspace) as client:
        result = await client.call_tool("file_write", {"path": case["path"], "content": case["after"],
                                                       "overwrite": True})  # fmt: skip
    assert path.read_text() == case["before"], (name, result.content)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
@pytest.mark.parametrize("name", sorted(CASES))
async def test_shell_exec_asks_before_an_archive_by_path(workspace: Path, name: str) -> None:
    case = CASES[name]
    path = _set_up(workspace, case)
    (workspace / "new.dat").write_text(str(case["after"]))
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, f"cp new.dat {case['path']}", cwd=str(workspace))
    assert person.questions and path.read_text() == case["before"], (name, out.get("changes"))
