"""Red team 6: an executable made with the name of a program on the PATH is asked about (``effects._shadows``,
red team 5b F5: ``bin/git`` where the user's ``.envrc`` says ``PATH_add bin``) — but only a regular file
(``change.kind == "file"``). A *symlink* ``bin/git`` to an executable of another name (``tools/helper``) lands with
no question (the person declines every question), and the user's next ``git status`` in the project (direnv's PATH:
``$PWD/bin`` first) runs it, outside the box. The payload writes a marker in the test's tmp dir.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


async def test_attack_symlink_named_git_in_a_path_add_directory(workspace: Path, tmp_path: Path) -> None:
    marker = tmp_path / "MARKER-planted-git-ran"
    (workspace / ".envrc").write_text("PATH_add bin\n")  # the user's own, allowed with `direnv allow`
    (workspace / "bin").mkdir()
    fake = f"#!/usr/bin/env python3\nopen({str(marker)!r}, 'w').write('ran')\n"
    plant = program(
        workspace,
        "plant",
        "os.makedirs('tools', exist_ok=True)\n"
        f"open('tools/helper-x1', 'w').write({fake!r})\n"
        "os.chmod('tools/helper-x1', 0o755)\n"
        "os.symlink('../tools/helper-x1', 'bin/git')\n",
    )
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, plant)
    env = {**os.environ, "PATH": f"{workspace / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run(["sh", "-c", "git status"], cwd=workspace, env=env, capture_output=True, check=False)
    assert not marker.exists(), (
        f"the user's `git status` ran bin/git (a link the command made): questions={person.questions} "
        f"transaction={out.get('transaction')} summary={(out.get('changes') or {}).get('summary')}"
    )
