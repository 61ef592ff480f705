"""Red team 114 F3: red team 113 F3's answer for a conda ``environment.yml`` looks for one spelling of its channels,
a line starting ``channels:`` (``hook_configs._CONDA_CHANNELS``). conda reads the file as YAML, and takes packages
from a model-chosen place through other spellings the judge never sees:

- a quoted key (``"channels":``) or a flow mapping (``{name: app, channels: [...], ...}``): the same YAML mapping;
- a channel named in a dependency (``- <channel url>::python=3.11``, conda's MatchSpec ``channel::name``);
- the ``pip:`` section, which ``conda env create|update`` hands to pip as a requirements file: an
  ``--extra-index-url`` there is exactly red team 101 C's requirements-file index (a source distribution's build
  runs outside the box).

Each lands unasked from shell_exec (a person who declines everything) and file_write writes it. Control: the
``channels:`` block, asked and refused. (No YAML library is installed here: the premise is YAML's and conda's
documented reading.) Texts travel as data (conda_environments.json); the URLs name a closed port."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support import serve
from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio]

DATA = json.loads((Path(__file__).resolve().parent / "conda_environments.json").read_text())
BEFORE: str = DATA["before"]
CASES: dict[str, str] = DATA["cases"]


@pytest.mark.parametrize("case", sorted(CASES))
async def test_file_write_refuses_a_changed_conda_source(workspace: Path, case: str) -> None:
    (workspace / "environment.yml").write_text(BEFORE)
    async with serve("mcp-server-file-write", workspace) as client:
        result = await client.call_tool(
            "file_write", {"path": "environment.yml", "content": CASES[case], "overwrite": True}
        )
    assert (workspace / "environment.yml").read_text() == BEFORE, (case, result.content)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
@pytest.mark.parametrize("case", sorted(CASES))
async def test_shell_exec_asks_before_a_changed_conda_source(workspace: Path, case: str) -> None:
    (workspace / "environment.yml").write_text(BEFORE)
    (workspace / "new.dat").write_text(CASES[case])
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, "cp new.dat environment.yml", cwd=str(workspace))
    assert (workspace / "environment.yml").read_text() == BEFORE or person.questions, (
        case,
        out.get("transaction"),
        out.get("changes"),
    )
