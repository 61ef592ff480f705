"""Red team 8, I: everyday work asked about or refused (questions cost the user; a refusal blocks the work).

- ``pip install -e .`` (setuptools, PEP 660) of a flat-layout project into the project's existing ``.venv``: it
  writes ``__editable__.app-0.1.pth`` (``import __editable___app_0_1_finder; …install(…)``) and the finder module;
  ``later._python_start`` asks because "the call wrote the module the line imports in a site-packages that was
  there" — the very thing every editable install does. (``uv sync`` of such a project does the same.)
- A project whose pre-commit hook runs ``make lint``: adding an unrelated ``docs`` target to the Makefile is refused
  (the whole Makefile is protected, whatever the target; the docs say only the recipes of ``lint`` count for what
  they name).
- A Haskell project's ``package.yaml`` (hpack's manifest, edited in every such project) is refused: the policy
  protects it whole for the Node tools that read hook keys from it.
- ``script/test`` (GitHub's "scripts to rule them all": ``script/bootstrap``, ``script/test``) made executable:
  asked as "named like a program on your PATH" (``test``, a shell builtin nobody runs by PATH).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


async def _work(workspace: Path, command: str) -> tuple[list[str], dict[str, object]]:
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, command)
    return person.questions, out


async def test_pip_install_editable_into_the_projects_venv_is_asked_once_and_says_so(workspace: Path) -> None:
    # A trade-off (red team 8 FA1 against D2/6 L5): the finder module an editable install writes is code every start
    # runs, and a command can write the same; asked, with words that tell the person an install does this.
    python = "/usr/bin/python3"  # the distribution's Python: setuptools, wheel and pip, for an offline install
    probe = subprocess.run([python, "-c", "import setuptools, wheel, pip"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("no setuptools/pip for an offline editable install")
    (workspace / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "app"\nversion = "0.1"\n[tool.setuptools]\npy-modules = ["app"]\n'
    )
    (workspace / "app.py").write_text("X = 1\n")
    subprocess.run([python, "-m", "venv", "--system-site-packages", "--without-pip", str(workspace / ".venv")],
                   check=True, capture_output=True)  # fmt: skip
    questions, out = await _work(
        workspace, ".venv/bin/python -m pip install -q --no-build-isolation --no-deps --no-index -e ."
    )
    assert out["exitCode"] == 0, out["stderr"]
    assert len(questions) <= 1, questions
    assert all("pip install -e" in q for q in questions), questions


async def test_haskell_package_yaml_edit(workspace: Path) -> None:
    (workspace / "package.yaml").write_text("name: app\ndependencies:\n  - base\n")
    edit = program(workspace, "edit", "open('package.yaml', 'a').write('  - text\\n')\n")
    questions, out = await _work(workspace, edit)
    assert "text" in (workspace / "package.yaml").read_text(), f"questions={questions} changes={out.get('changes')}"


async def test_scripts_to_rule_them_all_script_test(workspace: Path) -> None:
    code = "os.makedirs('script')\nopen('script/test', 'w').write('#!/bin/sh\\nexec pytest\\n')\n"
    edit = program(workspace, "edit", code + "os.chmod('script/test', 0o755)\n")
    questions, _out = await _work(workspace, edit)
    assert questions == [], questions
