"""Red team 119 F3: manifests of other package managers (Dart's ``pubspec.yaml``, vcpkg's
``vcpkg-configuration.json``) name where packages are fetched from, and no rule reads them.

The one rule for manifests' sources (``package_sources``: Cargo.toml, composer.json, pyproject.toml, Pipfile,
pixi.toml, Gemfile, package.json, requirements …) has no entry for these data manifests:

- ``pubspec.yaml``: a dependency ``git: {url: …}`` or ``hosted: <url>`` makes the next ``dart pub get``/``flutter pub
  get`` fetch the package from there; its code runs at the user's next build (a Flutter plugin's ``android/``
  Gradle scripts and iOS podspec at ``flutter build``; a package's ``hook/build.dart`` at ``dart run``/``dart test``).
- ``vcpkg-configuration.json`` (or ``vcpkg.json``'s ``vcpkg-configuration``): a ``git`` registry gives every port
  the next ``vcpkg install`` (CMake's manifest mode: the next configure) builds, and a port's ``portfile.cmake`` is a
  CMake script run at that install.

Not checked against the tools (none is installed here); their documentation says so. Each change lands unasked
from shell_exec (a person declining everything) and file_write writes it. Control: the same move in a Cargo.toml
(``{ git = … }``) is asked and refused. Texts travel as data (other_manifests.json)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from support import serve
from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio]

CASES: dict[str, dict[str, Any]] = json.loads((Path(__file__).resolve().parent / "other_manifests.json").read_text())[
    "cases"
]


def _set_up(workspace: Path, case: dict[str, Any]) -> Path:
    path = workspace / str(case["path"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(str(case["before"]))
    return path


@pytest.mark.parametrize("name", sorted(CASES))
async def test_file_write_refuses_another_manifests_source(workspace: Path, name: str) -> None:
    case = CASES[name]
    path = _set_up(workspace, case)
    async with serve("mcp-server-file-write", workspace) as client:
        result = await client.call_tool("file_write", {"path": case["path"], "content": case["after"],
                                                       "overwrite": True})  # fmt: skip
    assert path.read_text() == case["before"], (name, result.content)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
@pytest.mark.parametrize("name", sorted(CASES))
async def test_shell_exec_asks_before_another_manifests_source(workspace: Path, name: str) -> None:
    case = CASES[name]
    path = _set_up(workspace, case)
    (workspace / "new.dat").write_text(str(case["after"]))
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, f"cp new.dat {case['path']}", cwd=str(workspace))
    assert person.questions and path.read_text() == case["before"], (name, out.get("changes"))
