"""Red team 117 F1: a lock file names where each package is downloaded from, and nothing judges it.

Red teams 99-116 made the judgement read every *manifest* that names a source (package.json specs, pyproject's
tables, Cargo.toml, composer.json, Gemfile, setup.cfg, requirements files …: ``package_sources``). But the user's
next install does not take the packages from the manifest: ``npm ci``, ``yarn install --frozen-lockfile``, ``pnpm
install --frozen-lockfile``, ``bun install``, ``uv sync --locked``, ``poetry install``, ``pipenv sync``, ``composer
install``, ``pixi install``, ``uv pip install -r pylock.toml`` take each package from the place its *lock file*
pins: package-lock.json's / npm-shrinkwrap.json's ``resolved``, yarn.lock's ``resolved``, pnpm-lock.yaml's
``resolution.tarball``, bun.lock's registry, uv.lock's ``sdist``/``wheels`` url, poetry.lock's ``[package.source]``,
Pipfile.lock's ``_meta.sources``, composer.lock's ``dist.url``, pixi.lock's package urls, pylock.toml's ``sdist``.
The lock's hash is the attacker's too (it is written beside the url). So a command that rewrites one url in a lock
file — the manifest untouched — has the user's next install download the model's package and run its install
scripts (npm's ``postinstall``, an sdist's ``setup.py``, a conda package's post-link) outside the box.

Checked by hand (scratch/verify_locks.py in the notes): with package.json and pyproject.toml untouched, ``npm ci``
fetched the tarball from the url package-lock.json's ``resolved`` names and ran its ``postinstall``; ``uv sync
--locked`` fetched the sdist uv.lock's ``sdist.url`` names and ran its ``setup.py``.

Each lock file change lands unasked from shell_exec with a person who declines everything, and file_write writes it.
Controls: the same choice written in the manifests (a package.json dependency from a url, a ``[[tool.uv.index]]``)
is asked and refused. Texts travel as data (lock_sources.json); URLs name a closed port."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from support import serve
from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio]

CASES: dict[str, dict[str, Any]] = json.loads((Path(__file__).resolve().parent / "lock_sources.json").read_text())[
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
async def test_file_write_refuses_a_changed_lock_source(workspace: Path, name: str) -> None:
    case = CASES[name]
    path = _set_up(workspace, case)
    async with serve("mcp-server-file-write", workspace) as client:
        result = await client.call_tool("file_write", {"path": case["path"], "content": case["after"],
                                                       "overwrite": True})  # fmt: skip
    assert _unchanged(path, case), (name, result.content)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
@pytest.mark.parametrize("name", sorted(CASES))
async def test_shell_exec_asks_before_a_changed_lock_source(workspace: Path, name: str) -> None:
    case = CASES[name]
    path = _set_up(workspace, case)
    (workspace / "new.dat").write_text(case["after"])
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, f"cp new.dat {case['path']}", cwd=str(workspace))
    assert _unchanged(path, case) or person.questions, (name, out.get("transaction"), out.get("changes"))
