"""Red team 49 F6 (a false alarm): a virtual environment made where the project's .envrc puts its bin first on PATH
was asked about (its pip, python: names of system programs)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.boxed import Person, run, shell
from support.hooked import git

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


async def test_a_venv_made_where_envrc_puts_its_bin_on_path_is_not_asked_about(workspace: Path) -> None:
    (workspace / ".envrc").write_text("export VIRTUAL_ENV=.venv\nPATH_add .venv/bin\n")
    (workspace / "main.py").write_text("print(1)\n")
    git(workspace, "init", "-q")
    person = Person(answer=True)
    async with shell(workspace, person) as client:
        out = await run(client, "/usr/bin/python3 -m venv .venv && ls .venv/bin", cwd=str(workspace))
    assert not person.questions, (
        " || ".join(person.questions),
        out.get("stdout"),
        out.get("changes", {}).get("summary"),
    )
