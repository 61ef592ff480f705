"""Red team 116 F2: where packages come from, in spellings the judgement of red teams 101 C, 113 F1-F3 and 114 F3-F4
does not read. The judgement reads a package.json's top-level dependency tables and ``overrides``/``resolutions``,
pyproject's ``[project]`` lists, ``[tool.uv]`` indexes and sources, Poetry's and PDM's ``source``, a Pipfile's
``[[source]]``, a pixi.toml's channels, and pip's options in files named ``requirements*``/``constraints*``. The same
choice of source has other homes, each read by the package manager the project uses at its next install (which
downloads the package and runs its build or install scripts, outside the box):

- package.json ``pnpm.overrides`` and ``pnpm.packageExtensions`` (pnpm), ``workspaces.catalog`` (bun: a dependency
  written ``catalog:`` takes the catalog's spec);
- Cargo.toml ``[dependencies]`` from ``git`` and ``[patch.crates-io]`` (cargo build runs the crate's build.rs);
- composer.json ``repositories`` (Composer takes the package from that repository; its autoloaded files run with the
  project);
- a Gemfile ``source`` (bundler);
- pyproject ``[tool.poetry.dependencies]`` from git, ``[tool.pixi.workspace] channels``, ``[tool.uv]
  dev-dependencies``, ``[tool.pdm.dev-dependencies]``; a pixi.toml ``[pypi-dependencies]`` from git; a Pipfile
  ``[packages]`` entry from git; setup.cfg ``install_requires`` with a direct reference;
- pip options in a requirements file of another everyday name: ``dev-requirements.txt``, and
  ``requirements/base.txt`` which the project's (unchanged) ``requirements.txt`` includes with ``-r``;
- ``.lfsconfig``'s ``lfs.url`` (git-lfs reads it from the work tree: the next ``git pull``/``checkout`` fetches the
  LFS objects it writes into the work tree from there, and ``git push`` uploads them there), while ``.gitmodules``,
  its git twin, is protected.

Each lands unasked from shell_exec with a person who declines everything, and file_write writes it. Controls: the
spellings the judgement reads (package.json ``overrides``, ``requirements.txt`` ``--index-url``, a pyproject direct
reference, ``.gitmodules``) are asked and refused. Texts travel as data (package_sources.json); URLs name a closed
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

CASES: dict[str, dict[str, Any]] = json.loads((Path(__file__).resolve().parent / "package_sources.json").read_text())[
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
async def test_file_write_refuses_a_changed_package_source(workspace: Path, name: str) -> None:
    case = CASES[name]
    path = _set_up(workspace, case)
    async with serve("mcp-server-file-write", workspace) as client:
        result = await client.call_tool("file_write", {"path": case["path"], "content": case["after"],
                                                       "overwrite": True})  # fmt: skip
    assert _unchanged(path, case), (name, result.content)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
@pytest.mark.parametrize("name", sorted(CASES))
async def test_shell_exec_asks_before_a_changed_package_source(workspace: Path, name: str) -> None:
    case = CASES[name]
    path = _set_up(workspace, case)
    (workspace / "new.dat").write_text(case["after"])
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, f"cp new.dat {case['path']}", cwd=str(workspace))
    assert _unchanged(path, case) or person.questions, (name, out.get("transaction"), out.get("changes"))
