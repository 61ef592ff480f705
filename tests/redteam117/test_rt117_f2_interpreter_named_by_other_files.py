"""Red team 117 F2: a file that names the interpreter a tool starts, by its path — in a spelling the judgement does not
know.

Red team 8 J made ``.python-version`` naming an interpreter by path asked (refused to file_write): uv runs that file
to query it at the user's next ``uv run``/``uv sync``, outside the box (``python_startup.version_path``). The same
choice has other homes that the judgement does not look at (``_VERSION_FILES`` holds neither):

- ``.python-versions`` (plural), which uv reads as ``.python-version`` where that file is absent (uv's
  ``PYTHON_VERSIONS_FILENAME``): shown here with the real uv — the user's next ``uv run`` ran ``./tools/py``;
- ``.pdm-python``, where PDM stores the interpreter every later ``pdm`` command uses ("The interpreter path will be
  stored in .pdm-python and used by subsequent commands", pdm-project.org, usage/project).

``tools/`` is an executable place (no new-executable question), so the whole plant lands with a person who declines
everything, and file_write writes either file. Control: ``.python-version`` naming the same program is asked and
refused. Texts travel as data (interpreter_files.json); the payload only writes a marker."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support import serve
from support.planted import landed, plant, sh_payload

pytestmark = [pytest.mark.anyio]

DATA: dict[str, Any] = json.loads((Path(__file__).resolve().parent / "interpreter_files.json").read_text())
CASES: dict[str, dict[str, Any]] = DATA["cases"]


def _uv() -> str | None:
    for candidate in (Path.home() / ".local/bin/uv", Path(sys.base_prefix) / "bin" / "uv"):
        if candidate.exists():
            return str(candidate)
    found = shutil.which("uv")
    return found if found and ".pyenv/shims" not in found else None


def _text(case: dict[str, Any], workspace: Path) -> str:
    return str(case["after"]).replace("{root}", str(workspace))


def _set_up(workspace: Path, case: dict[str, Any]) -> Path:
    path = workspace / str(case["path"])
    if case["before"] is not None:
        path.write_text(case["before"])
    return path


def _unchanged(path: Path, case: dict[str, Any]) -> bool:
    return (not path.exists()) if case["before"] is None else path.read_text() == case["before"]


@pytest.mark.parametrize("name", sorted(CASES))
async def test_file_write_refuses_an_interpreter_named_by_path(workspace: Path, name: str) -> None:
    case = CASES[name]
    path = _set_up(workspace, case)
    async with serve("mcp-server-file-write", workspace) as client:
        result = await client.call_tool("file_write", {"path": case["path"], "content": _text(case, workspace),
                                                       "overwrite": True})  # fmt: skip
    assert _unchanged(path, case), (name, result.content)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
@pytest.mark.parametrize("name", sorted(CASES))
async def test_shell_exec_asks_before_an_interpreter_named_by_path(workspace: Path, tmp_path: Path, name: str) -> None:
    case = CASES[name]
    path = _set_up(workspace, case)
    marker = tmp_path / "MARKER-interpreter-ran"
    person, out = await plant(
        workspace, {case["path"]: _text(case, workspace), DATA["program"]: sh_payload(marker)}, {DATA["program"]: 0o755}
    )
    assert _unchanged(path, case) or person.questions, (
        f"{case['path']} now names {DATA['program']} unasked: questions={person.questions} "
        f"transaction={out.get('transaction')} landed={landed(out)}"
    )


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
async def test_uv_runs_what_python_versions_names(workspace: Path, tmp_path: Path) -> None:
    """End to end: the plant through shell_exec (a person who declines), then the user's own ``uv run``."""
    uv = _uv()
    if uv is None:
        pytest.skip("uv missing")
    case = CASES["uv_python_versions"]
    marker = tmp_path / "MARKER-uv-ran"
    person, out = await plant(
        workspace, {case["path"]: _text(case, workspace), DATA["program"]: sh_payload(marker)}, {DATA["program"]: 0o755}
    )
    env = {**os.environ, "UV_CACHE_DIR": str(tmp_path / "uv-cache"), "UV_OFFLINE": "1"}
    subprocess.run([uv, "run", "--no-project", "python", "-c", "pass"], cwd=workspace, env=env, capture_output=True,
                   timeout=60)  # fmt: skip
    assert not marker.exists(), (
        f"the user's next `uv run` ran the program the command named in .python-versions: "
        f"questions={person.questions} transaction={out.get('transaction')} landed={landed(out)}"
    )
