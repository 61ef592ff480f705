"""Red team 113 F3: where the other everyday installers take packages from is not judged, while ``.npmrc``'s
``registry`` (protected) and a package.json's ``postinstall`` (asked) are, and uv's, Poetry's, PDM's and pip's
indexes are (red team 101 C).

- a package.json dependency (or an npm ``overrides`` entry) from an archive URL or a ``git+`` URL: the user's next
  ``npm install`` downloads it and runs its ``preinstall``/``install``/``postinstall`` scripts outside the box (the
  very scripts the server asks about in the project's own package.json);
- a ``Pipfile`` ``[[source]]`` ``url``: ``pipenv install``/``pipenv sync`` take every package from that index and run
  a source distribution's build;
- a ``pixi.toml`` channel: every ``pixi run``/``pixi shell``/``pixi install`` solves and installs from it first, and
  a conda package's ``post-link`` script runs at install;
- a conda ``environment.yml`` channel: ``conda env create|update -f environment.yml`` the same.

Each lands unasked from shell_exec with a person who declines everything, and file_write writes it. Controls: the
package.json ``postinstall`` and ``.npmrc`` ``registry``, asked and refused. Texts travel as data
(other_installers.json); URLs name a closed port."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support import serve
from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio]

DATA = json.loads((Path(__file__).resolve().parent / "other_installers.json").read_text())
BEFORE: dict[str, str] = DATA["before"]
CASES: dict[str, list[str]] = DATA["cases"]


@pytest.mark.parametrize("case", sorted(CASES))
async def test_file_write_refuses_a_changed_package_source(workspace: Path, case: str) -> None:
    path, text = CASES[case]
    (workspace / path).write_text(BEFORE[path])
    async with serve("mcp-server-file-write", workspace) as client:
        result = await client.call_tool("file_write", {"path": path, "content": text, "overwrite": True})
    assert (workspace / path).read_text() == BEFORE[path], (case, result.content)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
@pytest.mark.parametrize("case", sorted(CASES))
async def test_shell_exec_asks_before_a_changed_package_source(workspace: Path, case: str) -> None:
    path, text = CASES[case]
    (workspace / path).write_text(BEFORE[path])
    (workspace / "new.dat").write_text(text)
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, f"cp new.dat {path}", cwd=str(workspace))
    assert (workspace / path).read_text() == BEFORE[path] or person.questions, (
        case,
        out.get("transaction"),
        out.get("changes"),
    )
