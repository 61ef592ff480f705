"""Red team 117 F3: a package manager's or build tool's own config file kept in the project, which it reads at the
user's next install or build — unjudged where its twins are protected.

``.npmrc``, ``.yarnrc.yml``, ``bunfig.toml``, ``.cargo/config.toml`` (where packages come from) and
``.mvn/extensions.xml``, ``.mvn/wrapper/**`` (what Maven loads and runs) are protected paths. Their twins are not:

- ``.bundle/config`` (bundler's local config, read before the user's own): ``BUNDLE_MIRROR__HTTPS://RUBYGEMS__ORG/``
  sends every gem of ``bundle install`` to the model's mirror (a gem's extconf.rb runs at install);
- ``.pixi/config.toml`` (pixi's project-local config: pixi.prefix.dev, reference/pixi_configuration): ``[mirrors]``
  for a conda channel, or ``[pypi-config] index-url``, chooses where ``pixi install`` downloads from (a conda
  package's post-link script, an sdist's build run at install);
- ``.mvn/jvm.config`` (JVM options Maven 3.3.1+ starts every ``mvn`` with: ``-javaagent:`` runs the model's jar
  first) and ``.mvn/maven.config`` (options of every ``mvn``: ``--settings`` names the mirrors and repositories
  plugins are fetched from).

Each lands unasked from shell_exec with a person who declines everything, and file_write writes it. Controls:
``.npmrc`` and ``.mvn/extensions.xml`` are refused. Texts travel as data (project_configs.json); URLs name a closed
port."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from support import serve
from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio]

CASES: dict[str, dict[str, Any]] = json.loads((Path(__file__).resolve().parent / "project_configs.json").read_text())[
    "cases"
]


def _set_up(workspace: Path, case: dict[str, Any]) -> Path:
    for name, text in dict(case.get("also") or {}).items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(text)
    path = workspace / str(case["path"])
    path.parent.mkdir(parents=True, exist_ok=True)
    if case["before"] is not None:
        path.write_text(case["before"])
    return path


def _unchanged(path: Path, case: dict[str, Any]) -> bool:
    return (not path.exists()) if case["before"] is None else path.read_text() == case["before"]


@pytest.mark.parametrize("name", sorted(CASES))
async def test_file_write_refuses_a_changed_project_config(workspace: Path, name: str) -> None:
    case = CASES[name]
    path = _set_up(workspace, case)
    async with serve("mcp-server-file-write", workspace) as client:
        result = await client.call_tool("file_write", {"path": case["path"], "content": case["after"],
                                                       "overwrite": True})  # fmt: skip
    assert _unchanged(path, case), (name, result.content)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
@pytest.mark.parametrize("name", sorted(CASES))
async def test_shell_exec_asks_before_a_changed_project_config(workspace: Path, name: str) -> None:
    case = CASES[name]
    path = _set_up(workspace, case)
    (workspace / "new.dat").write_text(case["after"])
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, f"cp new.dat {case['path']}", cwd=str(workspace))
    assert _unchanged(path, case) or person.questions, (name, out.get("transaction"), out.get("changes"))
