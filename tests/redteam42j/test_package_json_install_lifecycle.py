"""Red team 5b: npm/pnpm/yarn lifecycle scripts in package.json are not judged.

``npm install`` (and ``pnpm install``, ``yarn``) with no arguments runs the root package's ``preinstall``,
``install``, ``postinstall``, ``prepare`` scripts — the user runs it after a pull or when told a dependency was
added, outside any box. ``hook_configs`` judges only git-hook keys, so a command that adds ``scripts.postinstall``
lands with no question (the person declines everything). The payload writes a marker in the test's tmp dir.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.hook_configs import changed_hook_keys
from support.boxed import Person, run, shell
from support.hooked import sets_script, writes

pytestmark = pytest.mark.anyio

LIFECYCLE = ["preinstall", "install", "postinstall", "prepare", "preprepare", "postprepare"]


@pytest.mark.parametrize("script", LIFECYCLE)
def test_lifecycle_script_counts_as_a_hook_key(script: str) -> None:
    old = json.dumps({"name": "app", "version": "1.0.0"}).encode()
    new = json.dumps({"name": "app", "version": "1.0.0", "scripts": {script: "node evil.js"}}).encode()
    assert changed_hook_keys(old, new), f"scripts.{script} added: judged as no change"


@pytest.mark.skipif(shutil.which("bwrap") is None or shutil.which("npm") is None, reason="bwrap or npm missing")
async def test_attack_postinstall_added_by_a_command_runs_at_the_users_npm_install(
    workspace: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "MARKER-postinstall-ran"
    (workspace / "package.json").write_text(json.dumps({"name": "app", "version": "1.0.0"}, indent=2) + "\n")
    edit = sets_script(workspace, "postinstall", writes(marker))
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, edit)
    # The user's own `npm install`, outside any box (no dependencies: nothing is fetched).
    subprocess.run(["npm", "install", "--offline", "--no-audit", "--no-fund"], cwd=workspace, capture_output=True,
                   timeout=120, check=False)  # fmt: skip
    assert not marker.exists(), f"postinstall ran; questions={person.questions} transaction={out.get('transaction')}"
