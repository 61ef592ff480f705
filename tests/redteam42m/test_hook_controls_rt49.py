"""Red team 49 controls beside test_hook_spellings_rt49.py: the spellings e306b3d already read (husky's ``npx
lint-staged``, pre-commit's hook in a path without a blank) stay protected. The person declines every question; the
user's next ``git commit`` runs, outside the box, what the command wrote. Payloads only write a marker in the test's
tmp dir (data: rt49_hook_payloads.json beside this file)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from support.hooked import git
from support.later import (
    first_commit,
    husky9,
    next_commit,
    pre_commits_module_rewritten,
    why,
    write_declined,
)

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]
DATA = json.loads((Path(__file__).parent / "rt49_hook_payloads.json").read_text())


async def test_a_program_a_husky_hook_runs_through_npx_is_not_rewritten_unasked(
    workspace: Path, tmp_path: Path
) -> None:
    """husky 9 puts node_modules/.bin first on PATH so a hook may say ``lint-staged`` rather than ``npx lint-staged``
    (husky 9's own advice). ``npx lint-staged`` protects ``node_modules/.bin/lint-staged`` (``_NPX``); the bare name
    protects nothing, and ``_shadows`` asks only about system programs' names there."""
    marker = tmp_path / "MARKER-husky9-bare-ran"
    target = workspace / "node_modules" / "lint-staged" / "bin" / "lint-staged.js"
    target.parent.mkdir(parents=True)
    target.write_text(DATA["sh_ok"])
    target.chmod(0o755)
    (workspace / "node_modules" / ".bin").mkdir()
    os.symlink("../lint-staged/bin/lint-staged.js", workspace / "node_modules" / ".bin" / "lint-staged")
    husky9(workspace, DATA["husky_h"], DATA["husky_stub"])
    (workspace / ".husky" / "pre-commit").write_text("npx lint-staged\n")
    (workspace / ".gitignore").write_text("node_modules/\n.t/\n")
    git(workspace, "init", "-q")
    git(workspace, "config", "core.hooksPath", ".husky/_")
    first_commit(workspace)
    person, out = await write_declined(workspace, "node_modules/lint-staged/bin/lint-staged.js",
                               DATA["sh_marker"].format(marker=str(marker)))  # fmt: skip
    next_commit(workspace)
    assert not marker.exists(), f"the next git commit (husky 9, `lint-staged`) ran the rewrite: {why(person, out)}"


async def test_the_module_pre_commits_hook_runs_is_not_rewritten_unasked(workspace: Path, tmp_path: Path) -> None:
    """The control of the project path with a space (test_hook_spellings_rt49): pre-commit's
    ``INSTALL_PYTHON=/…/myproj/.venv/bin/python3`` unquoted."""
    marker = tmp_path / "MARKER-pre-commit-space-ran"
    text = DATA["py_marker"].format(marker=str(marker))
    landed = await pre_commits_module_rewritten(workspace / "myproj", DATA["precommit_hook"], text)
    assert not marker.exists(), f"the next git commit ran the rewritten pre_commit/__main__.py: {landed}"
