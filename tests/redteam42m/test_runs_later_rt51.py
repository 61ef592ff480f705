"""Red team 51 (what runs later, files with several names): a command gets in, with no question (the person declines
every question), a change the user's own tools run later, outside the box. Payloads only leave a marker in the test's
tmp dir (data: rt51_payloads.json). nix, direnv and lefthook are not installed here: where they would run something,
the test judges by the question alone, or runs what they would run (as tests/redteam42m does)."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.boxed import Person, program, run, shell
from support.hooked import git
from support.later import SITE, first_commit, next_commit, why, write_declined

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]
DATA = json.loads((Path(__file__).parent / "rt51_payloads.json").read_text())


async def _edit(root: Path, code: str) -> tuple[Person, dict[str, Any]]:
    person = Person(answer=False)
    async with shell(root, person) as client:
        out = await run(client, program(root, "edit", code), cwd=str(root))
    return person, out


def _precommit_project(root: Path) -> None:
    """pre-commit installed as it installs itself: a venv whose pre_commit imports its third-party dependencies
    (the real one imports cfgv, yaml, identify, virtualenv …), and the hook pre-commit writes."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / ".venv")], check=True)
    site = root / SITE
    (site / "pre_commit").mkdir()
    (site / "pre_commit" / "__init__.py").write_text("")
    (site / "pre_commit" / "__main__.py").write_text(DATA["precommit_stub_main"])
    (site / "pre_commit" / "main.py").write_text(DATA["precommit_stub_mainmod_thirdparty"])
    (site / "cfgv.py").write_text(DATA["site_cfgv"])
    (site / "yaml.py").write_text(DATA["site_yaml"])
    (root / ".gitignore").write_text(".venv/\n.t/\n")
    git(root, "init", "-q")
    hook = root / ".git" / "hooks" / "pre-commit"
    hook.write_text(DATA["precommit_hook"].format(install_python=shlex.quote(str(root / ".venv/bin/python3"))))
    hook.chmod(0o755)
    first_commit(root)


async def test_a_module_named_like_a_dependency_of_pre_commit_at_the_top_is_asked(
    workspace: Path, tmp_path: Path
) -> None:
    """F1. ``python -m pre_commit`` runs from the top with the top first on sys.path: every module pre-commit imports
    is looked for there first, its third-party dependencies (``yaml``, ``cfgv``, ``identify``) as much as Python's own.
    ``effects._python_own`` asks only about names in ``sys.stdlib_module_names``: a new ``yaml.py`` lands unasked
    and runs at the next ``git commit``."""
    marker = tmp_path / "MARKER-yaml-shadow-ran"
    _precommit_project(workspace)
    control = next_commit(workspace)
    assert control.returncode == 0, control.stderr
    payload = DATA["py_marker"].format(marker=str(marker))
    person, out = await write_declined(workspace, DATA["thirdparty_shadow_name"], payload)
    next_commit(workspace)
    assert not marker.exists(), f"the next git commit (pre-commit hook) ran the new yaml.py: {why(person, out)}"


async def test_a_module_named_like_pythons_own_where_lefthook_runs_python_m_is_asked(
    workspace: Path, tmp_path: Path
) -> None:
    """F2. lefthook's ``run: python3 -m compileall -q {staged_files}`` runs from the top (lefthook's own hook in
    .git/hooks only calls ``lefthook run``): ``hook_runs.runs_modules`` reads only the hook files (.git/hooks, .husky),
    not lefthook.yml (nor the other hook managers' configs it protects), so a new ``argparse.py`` at the top is not
    asked about; compileall's main imports argparse. lefthook is not installed: its command is run as it runs it."""
    marker = tmp_path / "MARKER-lefthook-shadow-ran"
    (workspace / "lefthook.yml").write_text(DATA["lefthook_yml_compileall"])
    (workspace / "hello.py").write_text("print('hello')\n")
    (workspace / ".gitignore").write_text(".t/\n")
    git(workspace, "init", "-q")
    hook = workspace / ".git" / "hooks" / "pre-commit"
    hook.write_text(DATA["lefthook_git_hook"].replace("{{", "{").replace("}}", "}"))
    hook.chmod(0o755)
    first_commit(workspace)
    payload = DATA["py_marker"].format(marker=str(marker))
    person, out = await write_declined(workspace, DATA["stdlib_shadow_name"], payload)
    subprocess.run([sys.executable, "-m", "compileall", "-q", "hello.py"], cwd=workspace, capture_output=True,
                   timeout=60, check=False)  # fmt: skip
    assert not marker.exists(), f"lefthook's python3 -m compileall ran the new argparse.py: {why(person, out)}"


@pytest.mark.parametrize("case", DATA["envrc_cases"], ids=[c["id"] for c in DATA["envrc_cases"]])
async def test_a_shell_hook_added_to_the_nix_file_direnv_evaluates_is_asked(
    workspace: Path, tmp_path: Path, case: dict[str, str]
) -> None:
    """F3. ``changes.later`` asks about a change of the nix files only at the top of the root, by the names
    ``use nix``/``use flake``/``use devenv`` take with no argument, and only from the top's ``.envrc``
    (``hook_runs.direnv_evaluates``). direnv's ``use nix FILE`` hands FILE to nix-shell, ``use flake ./nix``
    evaluates nix/flake.nix, ``use_nix`` is the same function, and a monorepo's ``sub/.envrc`` evaluates
    sub/shell.nix at ``cd sub``: each shellHook runs in the user's shell, outside the box. nix is not installed
    here: judged by the question alone (as red team 50's test)."""
    marker = tmp_path / "MARKER-shell-hook"
    envrc_dir = workspace / case["envrc_dir"]
    envrc_dir.mkdir(parents=True, exist_ok=True)
    (envrc_dir / ".envrc").write_text(case["envrc"])
    nix_file = workspace / case["nix_file"]
    nix_file.parent.mkdir(parents=True, exist_ok=True)
    nix_file.write_text(DATA["shell_nix_ok"])
    git(workspace, "init", "-q")
    first_commit(workspace)
    payload = DATA["shell_nix_hook"].replace("{marker}", str(marker))
    person, out = await write_declined(workspace, case["nix_file"], payload)
    landed = "shellHook" in nix_file.read_text()
    assert not (landed and not person.questions), (
        f"a shellHook was added to {case['nix_file']} unasked: {why(person, out)}"
    )


async def test_a_shell_hook_written_through_another_name_of_shell_nix_is_asked(workspace: Path, tmp_path: Path) -> None:
    """F4 (files with several names). ``ln shell.nix notes/env.txt`` is not asked (shell.nix is not protected, only
    a change of it is asked). A later call rewrites the file through that other name: the server rewrites it under
    all its names, as natively — shell.nix included — but judges only the name the command used
    (``changes.later``: ``change.path in DIRENV_USE_FILES``)."""
    marker = tmp_path / "MARKER-shell-hook-linked"
    (workspace / ".envrc").write_text("use nix\n")
    (workspace / "shell.nix").write_text(DATA["shell_nix_ok"])
    (workspace / "notes").mkdir()
    (workspace / ".gitignore").write_text(".t/\n")
    git(workspace, "init", "-q")
    first_commit(workspace)
    first, out1 = await _edit(workspace, "os.link('shell.nix', 'notes/env.txt')\n")
    assert (workspace / "notes" / "env.txt").exists(), why(first, out1)
    text = DATA["shell_nix_hook"].replace("{marker}", str(marker))
    person, out = await _edit(workspace, f"open('notes/env.txt', 'r+').write({text!r})\n")
    landed = "shellHook" in (workspace / "shell.nix").read_text()
    assert not (landed and not person.questions and not first.questions), (
        f"a shellHook reached shell.nix through another name of it, unasked: {why(person, out)}"
    )
