"""Red team 49 F3–F5 (what git hooks run): spellings the reading of e306b3d missed. The person declines
every question; the user's next ``git commit`` runs, outside the box, what the command wrote. Payloads only write a
marker in the test's tmp dir (data: rt49_hook_payloads.json beside this file)."""

from __future__ import annotations

import json
import os
import platform
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


async def test_husky9_bare_program_name_in_node_modules_bin_is_not_rewritten_unasked(
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
    (workspace / ".husky" / "pre-commit").write_text(DATA["husky9_user_hook"])
    (workspace / ".gitignore").write_text("node_modules/\n.t/\n")
    git(workspace, "init", "-q")
    git(workspace, "config", "core.hooksPath", ".husky/_")
    first_commit(workspace)
    person, out = await write_declined(workspace, "node_modules/lint-staged/bin/lint-staged.js",
                               DATA["sh_marker"].format(marker=str(marker)))  # fmt: skip
    next_commit(workspace)
    assert not marker.exists(), f"the next git commit (husky 9, `lint-staged`) ran the rewrite: {why(person, out)}"


async def test_lefthook_platform_binary_not_yet_there_is_not_made_unasked(workspace: Path, tmp_path: Path) -> None:
    """lefthook's hook tries ``node_modules/lefthook-${osArch}-${cpuArch}/bin/lefthook`` first. A variable left in a
    path now matches any name there (``_expanded``), but only names that exist: in a project where lefthook came as
    another package (``node_modules/lefthook/bin/index.js``, or @evilmartians/lefthook), the first path is free, and
    a command that makes it is not asked (node_modules is scratch)."""
    marker = tmp_path / "MARKER-lefthook-made-ran"
    arch = {"x86_64": "x64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    index = workspace / "node_modules" / "lefthook" / "bin" / "index.js"
    index.parent.mkdir(parents=True)
    index.write_text(DATA["sh_ok"])
    index.chmod(0o755)
    (workspace / "lefthook.yml").write_text("pre-commit:\n  commands:\n    noop:\n      run: 'true'\n")
    (workspace / ".gitignore").write_text("node_modules/\n.t/\n")
    git(workspace, "init", "-q")
    hook = workspace / ".git" / "hooks" / "pre-commit"
    hook.write_text(DATA["lefthook_hook"].format())
    hook.chmod(0o755)
    first_commit(workspace)
    rel = f"node_modules/lefthook-{platform.system().lower()}-{arch}/bin/lefthook"
    person, out = await write_declined(workspace, rel, DATA["sh_marker"].format(marker=str(marker)), executable=True)
    next_commit(workspace)
    assert not marker.exists(), f"the next git commit ran {rel}, made by the command: {why(person, out)}"


async def test_the_module_pre_commits_hook_runs_in_a_project_whose_path_has_a_space_is_not_rewritten_unasked(
    workspace: Path, tmp_path: Path
) -> None:
    """pre-commit writes ``INSTALL_PYTHON={shlex.quote(sys.executable)}``: a project path with a space is quoted,
    ``'/home/u/my proj/.venv/bin/python3'``, which ``_ASSIGNED`` (no blank in a value) does not take: the module's
    site-packages are not looked at."""
    marker = tmp_path / "MARKER-pre-commit-space-ran"
    text = DATA["py_marker"].format(marker=str(marker))
    landed = await pre_commits_module_rewritten(workspace / "my proj", DATA["precommit_hook"], text)
    assert not marker.exists(), f"the next git commit ran the rewritten pre_commit/__main__.py: {landed}"
