"""Red team 8, F: ``file_write`` writes the same files with no refusal (it refuses what a hook runs by the same
``run_by_hooks`` list, so a file that list misses is written): the module ``python3 -m tools.check`` runs, the
``conftest.py`` a hook's pytest loads, the file ``.envrc`` sources, a hook manager's config. The user's next
``git commit`` (or direnv's next load) runs it. The payload writes a marker in the test's tmp dir."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from support.planted import py_payload, repo, sh_payload

pytestmark = [pytest.mark.anyio]

PYTEST = str(Path(sys.executable).parent / "pytest")


def _cases(marker: Path) -> dict[str, tuple[str, dict[str, str], str, str]]:
    return {
        # hook line, files before, the path file_write writes, its content
        "python3-m-module": ("python3 -m tools.check", {"tools/__init__.py": "", "tools/check.py": "print(1)\n"},
                             "tools/check.py", py_payload(marker)),
        "pytest-conftest": (f"{PYTEST} -q -p no:cacheprovider test_ok.py",
                            {"test_ok.py": "def test_ok():\n    pass\n", "conftest.py": ""},
                            "conftest.py", py_payload(marker)),
        "envrc-sourced": ("true", {".envrc": "source scripts/dev-env\n", "scripts/dev-env": "export A=1\n"},
                          "scripts/dev-env", sh_payload(marker).split("\n", 1)[1]),
        "captainhook-json": ('vendor/bin/captainhook hook:pre-commit "$@"', {"captainhook.json": "{}"},
                             "captainhook.json",
                             json.dumps({"pre-commit": {"enabled": True, "actions": [{"action": "./x.sh"}]}})),
    }  # fmt: skip


@pytest.mark.parametrize("case", ["python3-m-module", "envrc-sourced", "captainhook-json"])
async def test_attack_file_write_what_hooks_run_unseen(workspace: Path, tmp_path: Path, case: str) -> None:
    from support import serve

    marker = tmp_path / "MARKER-ran"
    hook, files, path, content = _cases(marker)[case]
    repo(workspace, hook, files)
    async with serve("mcp-server-file-write", workspace, "--history-dir", str(tmp_path / "history")) as client:
        result = await client.call_tool("file_write", {"path": path, "content": content, "overwrite": True})
    if case == "envrc-sourced":
        subprocess.run(["bash", "-c", "source ./.envrc"], cwd=workspace, capture_output=True, timeout=30)
    elif case != "captainhook-json":
        subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "x"], cwd=workspace, capture_output=True,
                       env={**__import__("os").environ, "GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@x",
                            "GIT_COMMITTER_NAME": "u", "GIT_COMMITTER_EMAIL": "u@x"})  # fmt: skip
    assert result.is_error and not marker.exists(), (
        f"file_write wrote {path} (what the hook {hook!r} / .envrc runs) and it ran: is_error={result.is_error} "
        f"marker={marker.exists()}"
    )
