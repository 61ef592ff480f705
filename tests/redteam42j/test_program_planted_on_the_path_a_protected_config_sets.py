"""Red team 5b: a program planted in a directory a protected config puts first on the user's PATH.

``.envrc`` is protected (direnv runs it), but what it *does* is not followed: the everyday ``PATH_add bin`` (or
``PATH_add node_modules/.bin``, mise's ``_.path``) puts a project directory first on the PATH of the user's shell as
soon as they ``cd`` into the project. A command that creates ``bin/git`` (``bin/**`` is an executable place: a new
executable there is not even asked about) has the user's very next ``git status`` run it, outside the box. direnv is
not installed here, so the user's shell is simulated with the PATH direnv exports (``$PWD/bin`` first); the person
declines every question; the payload writes a marker in the test's tmp dir.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


# Left: node_modules/.bin (a build directory: package managers fill it with programs named like global ones).
@pytest.mark.parametrize("where", ["bin", "scripts"])
async def test_attack_git_planted_in_a_path_add_directory(workspace: Path, tmp_path: Path, where: str) -> None:
    marker = tmp_path / "MARKER-planted-git-ran"
    (workspace / ".envrc").write_text(f"PATH_add {where}\n")  # the user's own, allowed with `direnv allow`
    (workspace / where).mkdir(parents=True)
    fake = f"#!/usr/bin/env python3\nopen({str(marker)!r}, 'w').write('ran')\n"
    plant = program(workspace, "plant", f"open('{where}/git', 'w').write({fake!r})\nos.chmod('{where}/git', 0o755)\n")
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, plant)
    # The user's shell in the project, as direnv leaves it: `PATH_add bin` puts $PWD/bin first.
    env = {**os.environ, "PATH": f"{workspace / where}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run(["sh", "-c", "git status"], cwd=workspace, env=env, capture_output=True, check=False)
    assert not marker.exists(), (
        f"the user's `git status` ran {where}/git the command planted: questions={person.questions} "
        f"transaction={out.get('transaction')} summary={(out.get('changes') or {}).get('summary')}"
    )
