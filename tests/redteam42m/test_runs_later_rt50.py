"""Red team 50 F2, F3, F5, F6 (what runs later): what direnv, mise, husky or a nix shell run, planted or changed by a
command with no question — the person declines every question. Payloads only leave a marker in the test's tmp dir;
configs and hooks are the ones the tools write (data: rt50_later_payloads.json). direnv and mise are not installed
here: the user's shell in the project is simulated with the PATH they export (as tests/redteam42j does)."""

from __future__ import annotations

import json
import os
import posixpath
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.hooked import git
from support.later import SITE, first_commit, husky9, next_commit, why, write_declined

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]
DATA = json.loads((Path(__file__).parent / "rt50_later_payloads.json").read_text())


def _venv(root: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / ".venv")], check=True)


async def _planted_git_runs(root: Path, tmp_path: Path, directory: str) -> str | None:
    """A command makes ``<directory>/git``; the user's ``git status`` in the project, with ``directory`` first on
    PATH (as direnv or mise leave the shell), runs it: the why, or None when it did not run."""
    marker = tmp_path / "MARKER-planted-git-ran"
    person, out = await write_declined(
        root, f"{directory}/git", DATA["sh_marker"].format(marker=str(marker)), executable=True
    )
    env = {**os.environ, "PATH": f"{root / directory}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run(["sh", "-c", "git status"], cwd=root, env=env, capture_output=True, check=False, timeout=60)
    return why(person, out) if marker.exists() else None


async def test_a_git_planted_where_direnvs_layout_node_puts_node_modules_bin_is_asked(
    workspace: Path, tmp_path: Path
) -> None:
    """direnv's stdlib ``layout node`` is ``PATH_add node_modules/.bin`` (the spelling red team 48 B fixed):
    ``hook_runs.path_dirs`` reads only the literal PATH_add / PATH= / mise _.path."""
    (workspace / ".envrc").write_text(DATA["envrc_layout_node"])
    (workspace / "node_modules" / ".bin").mkdir(parents=True)
    why = await _planted_git_runs(workspace, tmp_path, "node_modules/.bin")
    assert why is None, f"`git status` after direnv loaded `layout node` ran node_modules/.bin/git: {why}"


async def test_a_git_planted_in_the_venv_bin_envrc_activates_is_asked(workspace: Path, tmp_path: Path) -> None:
    """``source .venv/bin/activate`` in .envrc (the most common direnv line of a Python project) puts .venv/bin first
    on PATH; .venv is scratch and not a PATH dir for ``_shadows``: a ``git`` there is not asked about."""
    _venv(workspace)
    (workspace / ".envrc").write_text(DATA["envrc_activate_venv"])
    why = await _planted_git_runs(workspace, tmp_path, ".venv/bin")
    assert why is None, f"`git status` after direnv sourced .venv/bin/activate ran .venv/bin/git: {why}"


async def test_a_git_planted_in_the_venv_bin_mise_activates_is_asked(workspace: Path, tmp_path: Path) -> None:
    """mise's ``[env] _.python.venv = ".venv"`` activates .venv (its bin first on PATH) at every ``cd``."""
    _venv(workspace)
    (workspace / "mise.toml").write_text(DATA["mise_python_venv"])
    why = await _planted_git_runs(workspace, tmp_path, ".venv/bin")
    assert why is None, f"`git status` after mise activated .venv ran .venv/bin/git: {why}"


async def test_husky9_bare_name_not_installed_yet_is_not_made_unasked(workspace: Path, tmp_path: Path) -> None:
    """husky 9 puts node_modules/.bin first on PATH; a bare name the hook runs is protected there only when the file
    exists (``hook_runs._on_path``: ``os.path.lexists``). A hook that runs an optional tool (or one installed
    globally, first found in node_modules/.bin once there) lets a command make ``node_modules/.bin/<name>``: not
    asked (a package's name, not a system program's: ``effects._shadows``); the next ``git commit`` runs it."""
    marker = tmp_path / "MARKER-husky9-new-bin-ran"
    (workspace / "node_modules" / ".bin").mkdir(parents=True)
    husky9(workspace, DATA["husky_h"], DATA["husky_stub"])
    (workspace / ".husky" / "pre-commit").write_text(DATA["husky9_user_hook_optional_tool"])
    (workspace / ".gitignore").write_text("node_modules/\n.t/\n")
    git(workspace, "init", "-q")
    git(workspace, "config", "core.hooksPath", ".husky/_")
    first_commit(workspace)
    payload = DATA["sh_marker"].format(marker=str(marker))
    person, out = await write_declined(workspace, "node_modules/.bin/prettier", payload, executable=True)
    next_commit(workspace)
    assert not marker.exists(), f"the next git commit ran node_modules/.bin/prettier, made unasked: {why(person, out)}"


async def test_mise_env_source_script_is_not_rewritten_unasked(workspace: Path, tmp_path: Path) -> None:
    """mise's ``[env] _.source = "./scripts/env.sh"`` sources that bash script at every prompt in the project
    (``mise activate``'s hook-env), as direnv's ``source_env`` does (which ``hook_runs`` follows). mise.toml is
    protected whole but not read for what it runs: the script is an ordinary file. mise is not installed here: the
    user's next prompt is simulated by sourcing the script as mise does."""
    marker = tmp_path / "MARKER-mise-source-ran"
    (workspace / "mise.toml").write_text(DATA["mise_source"])
    (workspace / "scripts").mkdir()
    (workspace / "scripts" / "env.sh").write_text(DATA["env_sh_ok"])
    git(workspace, "init", "-q")  # a repository, so that .envrc-style reading would happen (see the source_env test)
    first_commit(workspace)
    person, out = await write_declined(workspace, "scripts/env.sh", DATA["env_sh_marker"].format(marker=str(marker)))
    subprocess.run(["bash", "-c", ". ./scripts/env.sh"], cwd=workspace, capture_output=True, check=False, timeout=60)
    assert not marker.exists(), f"mise's next hook-env sourced the rewritten scripts/env.sh: {why(person, out)}"


async def test_direnv_use_nix_shell_hook_is_not_added_unasked(workspace: Path, tmp_path: Path) -> None:
    """``.envrc`` = ``use nix`` (direnv stdlib; ``use flake`` likewise): at the next ``cd`` direnv re-evaluates
    shell.nix (it watches it) and runs its ``shellHook`` in the user's shell, outside the box. A command adding a
    shellHook is not asked about (``hook_runs`` reads nothing ``use nix`` names). nix is not installed here: judged
    by the question alone."""
    marker = tmp_path / "MARKER-shell-hook"
    (workspace / ".envrc").write_text(DATA["envrc_use_nix"])
    (workspace / "shell.nix").write_text(DATA["shell_nix_ok"])
    git(workspace, "init", "-q")
    first_commit(workspace)
    person, out = await write_declined(workspace, "shell.nix", DATA["shell_nix_hook"].replace("{marker}", str(marker)))
    landed = "shellHook" in (workspace / "shell.nix").read_text()
    assert not (landed and not person.questions), f"a shellHook was added to shell.nix unasked: {why(person, out)}"


@pytest.mark.parametrize(
    ("repository", "where"),
    [(True, "."), (False, "."), (True, "sub")],
    ids=["git-repo", "no-git", "git-repo-subdir-envrc"],
)
async def test_a_script_envrc_sources_is_protected_with_or_without_a_repository(
    workspace: Path, tmp_path: Path, repository: bool, where: str
) -> None:
    """The same script named by ``.envrc``'s ``source_env``: protected in a git repository (control, passes); in a
    project with no git repository, ``.envrc`` is not read at all (``hook_runs.run_by_hooks`` is reached only from
    ``git_dirs._repo_files``), yet direnv loads it all the same (fails); nor is an ``.envrc`` below the work tree's top
    (a monorepo's ``sub/.envrc``: only the top's is read), which direnv loads on ``cd sub`` (fails)."""
    marker = tmp_path / "MARKER-source-env-ran"
    (workspace / where / "scripts").mkdir(parents=True)
    (workspace / where / ".envrc").write_text("source_env scripts/env.sh\n")
    (workspace / where / "scripts" / "env.sh").write_text(DATA["env_sh_ok"])
    if repository:
        git(workspace, "init", "-q")
        first_commit(workspace)
    rel = posixpath.normpath(f"{where}/scripts/env.sh")
    person, out = await write_declined(workspace, rel, DATA["env_sh_marker"].format(marker=str(marker)))
    subprocess.run(["bash", "-c", f". ./{rel}"], cwd=workspace, capture_output=True, check=False, timeout=60)
    assert not marker.exists(), f"direnv's next load sourced the rewritten scripts/env.sh: {why(person, out)}"


async def test_a_module_named_like_pythons_own_at_the_top_where_pre_commit_runs_is_asked(
    workspace: Path, tmp_path: Path
) -> None:
    """pre-commit's hook runs ``"$INSTALL_PYTHON" -mpre_commit`` from the top of the work tree: ``-m`` puts the current
    directory first on sys.path, before the standard library. pre_commit/__main__.py and __init__.py are protected
    (red team 48 A), but the modules pre-commit imports are looked for in the project's top first: a new
    ``argparse.py`` there (made unasked: an ordinary new file) runs at the user's next ``git commit``."""
    marker = tmp_path / "MARKER-pre-commit-shadow-ran"
    _venv(workspace)
    package = workspace / SITE / "pre_commit"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(DATA["precommit_stub_main"])
    (package / "main.py").write_text(DATA["precommit_stub_mainmod"])
    (workspace / ".gitignore").write_text(".venv/\n.t/\n")
    git(workspace, "init", "-q")
    hook = workspace / ".git" / "hooks" / "pre-commit"
    hook.write_text(DATA["precommit_hook"].format(install_python=shlex.quote(str(workspace / ".venv/bin/python3"))))
    hook.chmod(0o755)
    first_commit(workspace)
    control = next_commit(workspace)
    assert control.returncode == 0, control.stderr  # the hook runs, and passes, before the command
    person, out = await write_declined(
        workspace, DATA["stdlib_shadow_name"], DATA["py_marker"].format(marker=str(marker))
    )
    next_commit(workspace)
    assert not marker.exists(), f"the next git commit (pre-commit hook) ran the new argparse.py: {why(person, out)}"
