"""Red team 8, J: files an everyday tool reads to choose what program to start — unprotected.

- ``.python-version`` holding a path (``./tools/py``): uv takes a path there as the interpreter and runs it to query
  it at the user's next ``uv run`` / ``uv sync`` (shown here with the real uv: "Querying Python at `./tools/py`").
  ``tools/`` is an executable place (no new-executable question) and ``py`` is no PATH program (no ``_shadows``).
- ``.env`` read by ``node --env-file=.env`` (Node 20.6+; a hook ``node --env-file=.env scripts/check.js`` protects
  ``scripts/check.js`` only): Node applies ``NODE_OPTIONS`` from the env file, so ``--require ./tools/x.cjs`` runs
  first. (direnv's ``dotenv``, mise's ``_.file``, ``uv run --env-file`` read the same file: ``LD_PRELOAD``,
  ``BASH_ENV``, ``GIT_CONFIG_PARAMETERS`` there alike.)
The payload writes a marker in the test's tmp dir.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from support.planted import git, landed, plant, repo, sh_payload

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


def _uv() -> str | None:
    import sys

    for candidate in (Path.home() / ".local/bin/uv", Path(sys.base_prefix) / "bin" / "uv"):
        if candidate.exists():
            return str(candidate)
    found = shutil.which("uv")
    return found if found and ".pyenv/shims" not in found else None


async def test_attack_python_version_names_an_interpreter_by_path(workspace: Path, tmp_path: Path) -> None:
    uv = _uv()
    if uv is None:
        pytest.skip("uv missing")
    marker = tmp_path / "MARKER-uv-ran"
    (workspace / ".python-version").write_text("3.11\n")
    person, out = await plant(
        workspace, {".python-version": "./tools/py\n", "tools/py": sh_payload(marker)}, {"tools/py": 0o755}
    )
    # the user's next `uv run` in the project, outside the box
    env = {**os.environ, "UV_CACHE_DIR": str(tmp_path / "uv-cache"), "UV_OFFLINE": "1"}
    subprocess.run([uv, "run", "--no-project", "python", "-c", "pass"], cwd=workspace, env=env, capture_output=True,
                   timeout=60)  # fmt: skip
    assert not marker.exists(), (
        f"the user's next `uv run` ran the interpreter the command named in .python-version: "
        f"questions={person.questions} transaction={out.get('transaction')} landed={landed(out)}"
    )


async def test_attack_env_file_node_options(workspace: Path, tmp_path: Path) -> None:
    if shutil.which("node") is None:
        pytest.skip("node missing")
    marker = tmp_path / "MARKER-node-ran"
    repo(workspace, "node --env-file=.env scripts/check.js", {".env": "APP=1\n", "scripts/check.js": "// ok\n"})
    js = f"require('fs').writeFileSync({json.dumps(str(marker))}, 'ran');\n"
    person, out = await plant(workspace, {".env": "APP=1\nNODE_OPTIONS=--require ./tools/x.cjs\n", "tools/x.cjs": js})
    git(workspace, "commit", "-q", "--allow-empty", "-m", "next")
    assert not marker.exists(), (
        f"the user's next commit ran tools/x.cjs through .env's NODE_OPTIONS: questions={person.questions} "
        f"transaction={out.get('transaction')} landed={landed(out)}"
    )
