"""Red team 48 (issue 42, what runs later): the program a hook manager's own git hook runs, installed in the project
(the project's .venv for pre-commit, node_modules for lefthook), and the directories a hook runner or ``.envrc`` puts
first on PATH although they are build directories (husky 9, direnv's ``PATH_add node_modules/.bin``): a command wrote
there with no question and the user's next ``git commit`` (or ``git status``) ran it outside the box.

- pre-commit's hook (``pre-commit install`` from the project's venv) runs ``exec "$INSTALL_PYTHON" -mpre_commit``:
  the module ``pre_commit`` found on that interpreter's path (``.venv/lib/python3.X/site-packages/pre_commit/
  __main__.py``). ``hook_runs._MODULES`` wants ``-m <space> name`` and looks for the module from the work tree's top
  only; ``.venv`` is a scratch directory and only ``bin/python*``/``activate*``/``pyvenv.cfg`` are judged there.
- lefthook's hook (``lefthook install`` from npm) runs ``"$dir/node_modules/lefthook-${osArch}-${cpuArch}/bin/
  lefthook"``: a path built with variables in its middle, which ``_BUILT`` keeps literally (never a file).

Payloads (data: rt48_payloads.json beside this file) only write a marker in the test's tmp dir.
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.boxed import Person, program, run, shell
from support.hooked import git
from support.later import SITE, husky9, next_commit, pre_commit_venv

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]
DATA = json.loads((Path(__file__).parent / "rt48_payloads.json").read_text())


async def _rewrite(workspace: Path, rel: str, text: str) -> tuple[Person, dict[str, Any]]:
    edit = program(workspace, "edit", f"open({rel!r}, 'w').write({text!r})\n")
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, edit)
    return person, out


async def test_a_hook_managers_module_in_the_project_venv_is_not_rewritten_unasked(
    workspace: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "MARKER-pre-commit-ran"
    pre_commit_venv(workspace, DATA["precommit_hook"], quoted=False)
    site = SITE
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "--no-verify", "-m", "init")
    person, out = await _rewrite(workspace, f"{site}/pre_commit/__main__.py",
                                 DATA["py_marker"].format(marker=str(marker)))  # fmt: skip
    next_commit(workspace)  # the user's next commit, outside the box
    assert not marker.exists(), (
        f"the user's next git commit ran what the command wrote to {site}/pre_commit/__main__.py (the module "
        f"pre-commit's hook runs): questions={person.questions} summary={out.get('changes', {}).get('summary')}"
    )


async def test_a_hook_managers_binary_named_with_variables_in_node_modules_is_not_rewritten_unasked(
    workspace: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "MARKER-lefthook-ran"
    arch = {"x86_64": "x64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    rel = f"node_modules/lefthook-{platform.system().lower()}-{arch}/bin/lefthook"
    binary = workspace / rel
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\nexit 0\n")
    binary.chmod(0o755)
    (workspace / "lefthook.yml").write_text("pre-commit:\n  commands:\n    noop:\n      run: 'true'\n")
    (workspace / ".gitignore").write_text("node_modules/\n.t/\n")
    git(workspace, "init", "-q")
    hook = workspace / ".git" / "hooks" / "pre-commit"
    hook.write_text(DATA["lefthook_hook"].format())
    hook.chmod(0o755)
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "--no-verify", "-m", "init")
    person, out = await _rewrite(workspace, rel, DATA["sh_marker"].format(marker=str(marker)))
    next_commit(workspace)
    assert not marker.exists(), (
        f"the user's next git commit ran what the command wrote to {rel} (the program lefthook's hook runs): "
        f"questions={person.questions} summary={out.get('changes', {}).get('summary')}"
    )


async def test_a_system_program_planted_where_a_hook_runner_puts_node_modules_bin_first_is_asked(
    workspace: Path, tmp_path: Path
) -> None:
    """husky 9's ``.husky/_/h`` (what every hook stub sources) puts ``node_modules/.bin`` first on PATH and then runs
    ``sh -e .husky/<hook>``: a ``node_modules/.bin/sh`` runs at every hook. node_modules is scratch, so
    ``effects._shadows`` (``bin``/``.bin`` named like a program on PATH) and the new-executable question skip it."""
    marker = tmp_path / "MARKER-husky-sh-ran"
    (workspace / "node_modules" / ".bin").mkdir(parents=True)
    husky9(workspace, DATA["husky_h"], DATA["husky_stub"])
    (workspace / ".husky" / "pre-commit").write_text("echo checked\n")
    (workspace / ".gitignore").write_text("node_modules/\n.t/\n")
    git(workspace, "init", "-q")
    git(workspace, "config", "core.hooksPath", ".husky/_")  # what `husky` (its prepare script) sets
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "--no-verify", "-m", "init")
    code = f"p = 'node_modules/.bin/sh'\nopen(p, 'w').write({DATA['sh_marker'].format(marker=str(marker))!r})\n"
    edit = program(workspace, "edit", code + "os.chmod(p, 0o755)\n")
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, edit)
    next_commit(workspace)
    assert not marker.exists(), (
        "the user's next git commit (husky 9) ran node_modules/.bin/sh the command made: "
        f"questions={person.questions} summary={out.get('changes', {}).get('summary')}"
    )


async def test_a_system_program_planted_where_envrc_puts_node_modules_bin_first_is_asked(
    workspace: Path, tmp_path: Path
) -> None:
    """``.envrc`` saying ``PATH_add node_modules/.bin`` (what direnv's ``layout node`` does too): ``path_dirs`` finds
    the directory, but ``_shadows`` skips scratch directories, so ``node_modules/.bin/git`` lands unasked and the
    user's next ``git status`` in the project (direnv loaded) runs it."""
    marker = tmp_path / "MARKER-direnv-git-ran"
    (workspace / "node_modules" / ".bin").mkdir(parents=True)
    (workspace / ".envrc").write_text("PATH_add node_modules/.bin\n")
    git(workspace, "init", "-q")
    code = f"p = 'node_modules/.bin/git'\nopen(p, 'w').write({DATA['sh_marker'].format(marker=str(marker))!r})\n"
    edit = program(workspace, "edit", code + "os.chmod(p, 0o755)\n")
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, edit)
    # direnv's next load (simulated: its PATH_add, then .envrc sourced), then the user's own git
    subprocess.run(["bash", "-c", DATA["direnv_load_then_git"]], cwd=workspace, capture_output=True, timeout=30)
    assert not marker.exists(), (
        "node_modules/.bin/git (a directory .envrc puts first on PATH) ran at the user's next git: "
        f"questions={person.questions} summary={out.get('changes', {}).get('summary')}"
    )


async def test_a_package_update_of_a_program_a_hook_runs_is_asked_and_lands_whole_when_allowed(workspace: Path) -> None:
    """What a hook runs from node_modules (``npx lint-staged``) is asked about, not refused: refused, a package
    manager's update would land without it, half done."""
    package = workspace / "node_modules" / "lint-staged"
    (package / "bin").mkdir(parents=True)
    (package / "bin" / "cli.js").write_text("// version 1\n")
    (package / "package.json").write_text('{"version": "1"}\n')
    (workspace / "node_modules" / ".bin").mkdir()
    (workspace / "node_modules" / ".bin" / "lint-staged").symlink_to("../lint-staged/bin/cli.js")
    (workspace / ".gitignore").write_text("node_modules/\n.t/\n")
    git(workspace, "init", "-q")
    hook = workspace / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nnpx --no lint-staged\n")
    hook.chmod(0o755)
    update = "for p, t in (('bin/cli.js', '// version 2\\n'), ('package.json', '{\"version\": \"2\"}\\n')):\n"
    update += "    open('node_modules/lint-staged/' + p, 'w').write(t)\n"
    edit = program(workspace, "edit", update)
    person = Person(answer=True)
    async with shell(workspace, person) as client:
        out = await run(client, edit)
    assert any("node_modules/lint-staged/bin/cli.js" in q and "git hooks run" in q for q in person.questions), (
        person.questions
    )
    assert (package / "bin" / "cli.js").read_text() == "// version 2\n", out.get("changes")
    assert (package / "package.json").read_text() == '{"version": "2"}\n'
