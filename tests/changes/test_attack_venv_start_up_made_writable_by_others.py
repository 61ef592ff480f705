"""Red team 74 F1: a virtual environment's start-up code made writable by others lands with no question.

The judge asks when a command *rewrites* what every start of the project's Python runs (``.venv/bin/activate``,
``pyvenv.cfg``, a ``.pth`` file's ``import`` line, a new ``.pth`` in ``site-packages``: ``changes.later``). But a mode
change is judged by ``refusals.judge_modes`` alone, which asks about "writable by group or others" only outside the
build and cache directories — and ``.venv`` is one. So ``chmod o+w .venv/bin/activate`` or ``chmod 777
.venv/lib/pythonX.Y/site-packages`` lands unasked (the person here declines every question): from then on any local
user may put a ``.pth`` there or a line in ``activate``, and the user's next ``uv run``/``pytest``/``source
.venv/bin/activate`` runs it as the user, outside the box. The question the content judgement would ask is skipped by
giving the pen to someone else.

Passes when a mode change that lets group or others write what ``changes.later`` judges by content (or a directory
holding it) is refused or asked, in build and cache directories too.
"""

from __future__ import annotations

import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


async def test_attack_venv_start_up_files_given_to_others_unasked(workspace: Path) -> None:
    python = shutil.which("python3") or sys.executable
    subprocess.run([python, "-m", "venv", "--without-pip", str(workspace / ".venv")], check=True, capture_output=True)
    site = next((workspace / ".venv" / "lib").glob("python3*/site-packages"))
    (site / "distutils-precedence.pth").write_text("import os\n")
    rel = site.relative_to(workspace)
    code = (
        "os.chmod('.venv/bin/activate', 0o666)\n"
        f"os.chmod('{rel}', 0o777)\n"
        f"os.chmod('{rel}/distutils-precedence.pth', 0o666)\n"
    )
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, program(workspace, "modes", code))
    landed = {
        str(p.relative_to(workspace)): oct(stat.S_IMODE(p.stat().st_mode))
        for p in (workspace / ".venv" / "bin" / "activate", site, site / "distutils-precedence.pth")
        if p.stat().st_mode & 0o022
    }
    assert not landed, (
        f"start-up code of the project's Python made writable by others, unasked: {landed}; "
        f"questions={person.questions} summary={(out.get('changes') or {}).get('summary')}"
    )


async def test_a_lock_file_an_installer_keeps_at_the_top_of_the_environment_is_not_asked(workspace: Path) -> None:
    # Issue 45: uv makes `.venv/.lock` 0666 on purpose (any user of the environment may lock it); no start of the
    # environment's Python reads it, so `uv run` is not asked on every new project. `pyvenv.cfg` (which names the
    # interpreter) is read by every start: still asked.
    python = shutil.which("python3") or sys.executable
    subprocess.run([python, "-m", "venv", "--without-pip", str(workspace / ".venv")], check=True, capture_output=True)
    made = (
        "for name in ('.lock', 'CACHEDIR.TAG'):\n"
        "    open('.venv/' + name, 'w').close()\n"
        "    os.chmod('.venv/' + name, 0o666)\n"
    )
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        locked = await run(client, program(workspace, "lock", made))
        asked = list(person.questions)
        config = await run(client, program(workspace, "config", "os.chmod('.venv/pyvenv.cfg', 0o666)\n"))
    assert locked["transaction"] == "applied" and not asked, (locked, asked)
    assert stat.S_IMODE((workspace / ".venv" / ".lock").stat().st_mode) == 0o666
    assert config["transaction"] != "applied" and person.questions, (config, person.questions)
    assert not (workspace / ".venv" / "pyvenv.cfg").stat().st_mode & 0o022
