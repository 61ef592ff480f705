"""Red team 113 F4: the install hooks and plugin lists the server judges in ``pyproject.toml`` are not judged in the
other project files the same tools read them from.

- ``hatch.toml``: Hatch reads its whole configuration from it (``[envs.default]`` is ``[tool.hatch.envs.default]``
  without the prefix; it wins over pyproject.toml). ``pre-install-commands``/``post-install-commands`` there run at
  the user's next ``hatch run``/``hatch shell``/``hatch test`` that creates the environment — the very keys asked
  about in pyproject.toml (``hook_configs._pyproject_hooks``). ``installer_manifest`` does not name the file.
- ``[env] requires`` (hatch.toml) / ``[tool.hatch.env] requires`` (pyproject.toml): Hatch installs those plugins into
  its own environment and loads them at every command that uses an environment — what Poetry 2's
  ``[tool.poetry.requires-plugins]`` does, which is judged.
- ``pdm.toml`` (``pdm config --local``): ``[pypi] url`` is the index every ``pdm install``/``pdm sync`` takes packages
  from — what ``[[tool.pdm.source]]`` says, which is judged (red team 101 C).

Each lands unasked from shell_exec with a person who declines everything, and file_write writes it. Controls: the
pyproject.toml Hatch pre-install command and Poetry plugin, asked and refused. The commands only echo; texts travel
as data (project_tool_configs.json)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support import serve
from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio]

DATA = json.loads((Path(__file__).resolve().parent / "project_tool_configs.json").read_text())
BEFORE: dict[str, str] = DATA["before"]
CASES: dict[str, list[str]] = DATA["cases"]


@pytest.mark.parametrize("case", sorted(CASES))
async def test_file_write_refuses_an_install_hook_or_plugin(workspace: Path, case: str) -> None:
    path, text = CASES[case]
    (workspace / path).write_text(BEFORE[path])
    async with serve("mcp-server-file-write", workspace) as client:
        result = await client.call_tool("file_write", {"path": path, "content": text, "overwrite": True})
    assert (workspace / path).read_text() == BEFORE[path], (case, result.content)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
@pytest.mark.parametrize("case", sorted(CASES))
async def test_shell_exec_asks_before_an_install_hook_or_plugin(workspace: Path, case: str) -> None:
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
