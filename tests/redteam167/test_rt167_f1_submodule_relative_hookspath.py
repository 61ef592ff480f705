"""Red team 167 F1: a submodule's own relative ``core.hooksPath`` is taken from the superproject's top.

Set-up (the user's own): ``proj`` (the allowed root) is a repository with a submodule ``web``; inside the
submodule the user ran ``git config core.hooksPath .githooks`` (what husky's ``husky install`` / ``npx husky``
does, with ``.husky/_``): the submodule's git dir ``proj/.git/modules/web/config`` holds a *relative* hooksPath,
which git takes from the top of the submodule's work tree: ``proj/web/.githooks``. The submodule is not checked out
right now (``git submodule deinit``: the state red team 166 used).

The model runs one shell_exec command that links ``web/.githooks/post-checkout`` and ``web/.githooks/pre-commit``
to the project's own executable ``scripts/lint.sh`` (links are not "new executables", so nothing is asked) and
appends a line to ``lint.sh`` (a rewrite: applied, undoable, not asked). A person declines every question (none is
asked). The user's next ``git submodule update --init`` (outside any box) checks the submodule out — the untracked
links are kept — and git runs ``post-checkout``; their next commit there runs ``pre-commit``: the appended line runs.
(Plain new hook files are asked as new executables; the link to an existing executable is the way past that.)

Cause: ``git_dirs._repo_files`` reads every member of the family (``modules/*``, ``worktrees/*``) for its
hooksPath but expands a relative one against the superproject's work tree (``proj/.githooks``), never against the
member's own work tree (``core.worktree`` of the submodule's config, or a linked work tree's ``gitdir``).

Control: the submodule checked out (``web/.git`` present): the walk up from the path reaches ``web`` and reads its
config with ``web`` as the top: refused, nothing runs.
Payload and config lines travel as data (rt167_submodule_hookspath.json).

Answered: ``git_dirs._family_configs`` takes a work tree's or submodule's relative paths from each work tree git may
run it in: its ``core.worktree``, its ``gitdir`` file, its name under ``modules/`` and the top."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

DATA: dict[str, Any] = json.loads((Path(__file__).resolve().parent / "rt167_submodule_hookspath.json").read_text())
GIT_ENV = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@b",
           "GIT_CONFIG_NOSYSTEM": "1"}  # fmt: skip


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-c", "protocol.file.allow=always", *args], cwd=cwd, capture_output=True,
                          check=False, timeout=60, env={**os.environ, **GIT_ENV})  # fmt: skip


def _repository(proj: Path, checked_out: bool) -> None:
    lib = proj.parent / "websrc"
    lib.mkdir()
    (lib / "index.txt").write_text("web\n")
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-qm", "web")):
        assert _git(lib, *args).returncode == 0
    (proj / "scripts").mkdir()
    (proj / "scripts" / "lint.sh").write_text(DATA["script"])
    (proj / "scripts" / "lint.sh").chmod(0o755)  # the project's own executable script
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-qm", "init")):
        assert _git(proj, *args).returncode == 0
    done = _git(proj, "submodule", "add", "-q", str(lib), "web")
    assert done.returncode == 0, done.stderr
    assert _git(proj, "commit", "-qm", "submodule").returncode == 0
    module = proj / ".git" / "modules" / "web"
    with (module / "config").open("a") as config:
        config.write(DATA["hooks_path"])  # the user's own `git config core.hooksPath .githooks` in web
    if not checked_out:
        assert _git(proj, "submodule", "deinit", "-q", "-f", "web").returncode == 0
        assert (proj / "web").is_dir() and not (proj / "web" / ".git").exists()


def _user_runs_git(proj: Path) -> None:
    _git(proj, "submodule", "update", "-q", "--init")
    _git(proj / "web", "commit", "-q", "--allow-empty", "-m", "x")


async def _via_shell_exec(proj: Path, text: str) -> dict[str, Any]:
    (proj / ".t").mkdir()
    code = "import os\nos.makedirs('web/.githooks', exist_ok=True)\n"
    for name in DATA["hook_names"]:
        code += f"os.symlink('../../scripts/lint.sh', 'web/.githooks/{name}')\n"
    code += f"open('scripts/lint.sh', 'a').write({text!r})\n"
    (proj / ".t" / "put.py").write_text(code)
    person = Person(False)
    async with shell(proj, person) as client:
        out = await run(client, DATA["shell_line"], cwd=str(proj))
    shutil.rmtree(proj / ".t")
    return {"transaction": out.get("transaction"), "changes": out.get("changes"), "questions": person.questions}


@pytest.mark.parametrize("state", ["deinit", "control_checked_out"])
async def test_a_submodules_relative_hooks_path_is_protected(workspace: Path, state: str) -> None:
    _repository(workspace, checked_out=state != "deinit")
    marker = workspace.parent / "hook-ran"
    payload = DATA["appended"].replace("{marker}", str(marker))
    report = await _via_shell_exec(workspace, payload)
    landed = [n for n in DATA["hook_names"] if os.path.lexists(workspace / "web" / ".githooks" / n)]
    _user_runs_git(workspace)  # the user's own git, outside any box
    assert not marker.exists(), {"landed": landed, **report}
    assert not landed, report
