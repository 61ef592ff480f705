"""Red team 120 F5: a dependency whose key is a describing word (``metadata``, ``license``, ``homepage`` …) in
Cargo.toml, a Pipfile or pixi.toml is skipped by the generic walk: its git source lands unasked.

``package_sources._walk`` leaves out every key in ``_DESCRIBING`` at any depth (``homepage``, ``repository``,
``documentation``, ``license``, ``readme``, ``keywords``, ``metadata`` …), but in these manifests a dependency table's
keys are dependency names the model picks freely: Cargo takes ``metadata = { git = …, package = "evil" }`` for the
crate ``evil`` from that repository (the key is only its local name), ``[patch.crates-io]`` the same; a Pipfile's
``[packages]`` and pixi's ``[pypi-dependencies]`` key packages by name too. (pyproject.toml's ``tool.uv.sources`` is
read by its own reader and is not affected.)

Checked by hand (scratch/verify_cargo_named_dep.py in the notes, cargo 1.95, the repository a local file:// one
standing in for a code host): ``cargo build`` fetched ``metadata = { git = …, package = "evil" }`` and ran the
crate's build.rs (a marker written) — the model's code runs at the user's next ``cargo build``. pipenv and pixi
are not installed here (same reader, same skip).

Controls that pass: the same sources keyed ``evil`` are refused by file_write and asked by shell_exec. Texts travel
as data (describing_keys.json).
"""

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
    (Path(__file__).resolve().parent / "describing_keys.json").read_text(encoding="utf-8")
)["cases"]


def _set_up(workspace: Path, case: dict[str, Any]) -> Path:
    path = workspace / str(case["path"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(str(case["before"]), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", sorted(CASES))
async def test_file_write_refuses_a_source_under_a_describing_key(workspace: Path, name: str) -> None:
    case = CASES[name]
    path = _set_up(workspace, case)
    async with serve("mcp-server-file-write", workspace) as client:
        result = await client.call_tool("file_write", {"path": case["path"], "content": case["after"],
                                                       "overwrite": True})  # fmt: skip
    assert path.read_text(encoding="utf-8") == case["before"], (name, result.content)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
@pytest.mark.parametrize("name", sorted(CASES))
async def test_shell_exec_asks_before_a_source_under_a_describing_key(workspace: Path, name: str) -> None:
    case = CASES[name]
    path = _set_up(workspace, case)
    (workspace / "new.dat").write_text(str(case["after"]), encoding="utf-8")
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, f"cp new.dat {case['path']}", cwd=str(workspace))
    assert person.questions and path.read_text(encoding="utf-8") == case["before"], (name, out.get("changes"))
