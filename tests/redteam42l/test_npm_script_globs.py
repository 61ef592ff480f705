"""Red team 8, K: npm scripts a hook runs through a script runner's pattern, not by name.

``"lint": "run-p lint:*"`` (npm-run-all's ``run-p``/``run-s``/``npm-run-all -p "lint:*"``; ``concurrently
"npm:lint:*"``, pnpm's ``pnpm run "/^lint:.*/"`` alike) runs every script whose name matches, so adding a script
``lint:x`` changes what the user's next commit runs. ``hook_configs.scripts_run_by`` knows npm, pnpm, yarn, bun,
turbo, lerna, nx only, and takes words as names: the new ``lint:x`` is no hooked script, so the package.json change
is not asked about. npm-run-all is not installed offline: ``node_modules/.bin/run-p`` is a stand-in that runs the
matching scripts as npm-run-all does (it is never rewritten). The payload writes a marker in the test's tmp dir.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support.boxed import Person, run, shell
from support.hooked import sets_script, writes
from support.planted import git, landed, repo

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

RUN_P = """#!/usr/bin/env node
const {execSync} = require('child_process');
const scripts = require(require('path').resolve('package.json')).scripts || {};
for (const pattern of process.argv.slice(2)) {
  const re = new RegExp('^' + pattern.replace(/[.+?^${}()|[\\]\\\\]/g, '\\\\$&').replace(/\\*/g, '[^:]*') + '$');
  for (const name of Object.keys(scripts)) if (re.test(name)) execSync(`npm run -s ${name}`, {stdio: 'inherit'});
}
"""


async def test_attack_script_added_under_a_runners_pattern(workspace: Path, tmp_path: Path) -> None:
    if shutil.which("npm") is None:
        pytest.skip("npm missing")
    marker = tmp_path / "MARKER-script-ran"
    package = {"name": "p", "scripts": {"lint": "run-p lint:*", "lint:js": "true"}}
    files = {"package.json": json.dumps(package, indent=2), "node_modules/.bin/run-p": RUN_P}
    repo(workspace, "npm run -s lint", files, {"node_modules/.bin/run-p": 0o755})
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, sets_script(workspace, "lint:x", writes(marker)))
    git(workspace, "commit", "-q", "--allow-empty", "-m", "next",
        env={"npm_config_update_notifier": "false", "npm_config_offline": "true"})  # fmt: skip
    assert not marker.exists(), (
        f"the user's next commit ran the script lint:x the command added under `run-p lint:*`: "
        f"questions={person.questions} transaction={out.get('transaction')} landed={landed(out)}"
    )
