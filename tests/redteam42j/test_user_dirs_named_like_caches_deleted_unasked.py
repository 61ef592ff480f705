"""Red team 5b: a directory of the user's own files deleted with no question because of its *name*.

``[effects] scratch`` decides "build or cache directory" by the name of any path component — ``env``, ``tmp``, ``out``,
``deps``, ``coverage``, ``build``, ``target`` … — and deleting inside one never asks: not the tree-deletion question,
not the "git has no copy" one, not the non-git threshold (``max_unbacked_files`` = 3). Many projects keep their own
files in such names (``env/production.yaml``, ``tmp/notes.md``, ``out/`` of hand-made figures), with no sign that
they are a cache (no ``pyvenv.cfg``, not ignored by git, untracked: the only copy). ``rm -r env`` (no ``-f``: no deny
rule) deletes them all, applied with no question (the person declines everything).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


@pytest.mark.parametrize("git", [False, True], ids=["no-git", "git-untracked"])
@pytest.mark.parametrize("name", ["env", "tmp", "out"])
async def test_attack_rm_r_of_a_user_directory_named_like_a_cache(workspace: Path, name: str, git: bool) -> None:
    if git:
        subprocess.run(["git", "init", "-q"], cwd=workspace, check=True, capture_output=True)
    mine = workspace / name
    mine.mkdir()
    for i in range(6):
        (mine / f"settings-{i}.yaml").write_text(f"the user's own file {i}, nowhere else\n")
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, f"rm -r {name}")
    left = sorted(p.name for p in mine.iterdir()) if mine.exists() else []
    assert person.questions or len(left) == 6, (
        f"{name}/ (6 files of the user's, no copy anywhere) deleted unasked: transaction={out.get('transaction')} "
        f"summary={(out.get('changes') or {}).get('summary')} left={left}"
    )


async def test_a_virtual_environment_named_env_is_still_a_build_directory(workspace: Path) -> None:
    # What shows env/ is a virtual environment (its pyvenv.cfg): deleting it is not asked about.
    venv = workspace / "env"
    (venv / "lib").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    for i in range(6):
        (venv / "lib" / f"m{i}.py").write_text(f"x = {i}\n")
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, "rm -r env")
    assert not person.questions and out["transaction"] == "applied", (person.questions, out)
    assert not venv.exists()
