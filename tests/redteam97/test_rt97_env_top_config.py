"""Red team 97: a file at a Python environment's top that every pip run in it reads: ``pip.conf``.

``refusals._beside_the_start`` (issue 45) takes every file at an environment's top but ``pyvenv.cfg`` (and the start-up
modules) for one "no start of its Python reads", so making it writable by others is not asked. pip reads
``$VIRTUAL_ENV/pip.conf`` (its "site" configuration, ``sys.prefix/pip.conf``) on every run in the environment:
``index-url``, ``extra-index-url``, ``trusted-host``... Given to others to write, any local user may point the
user's next ``pip install`` (outside the box) at a package index of theirs: their code runs as the user at install.
Safe: the mode change asked (as for ``pyvenv.cfg``), declined here, the file left 0644.
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


def _venv(workspace: Path) -> Path:
    python = shutil.which("python3") or sys.executable
    subprocess.run([python, "-m", "venv", "--without-pip", str(workspace / ".venv")], check=True, capture_output=True,
                   timeout=120)  # fmt: skip
    conf = workspace / ".venv" / "pip.conf"
    conf.write_text("[global]\ntimeout = 30\n")  # the user's own, 0644
    conf.chmod(0o644)
    return conf


async def test_pip_conf_at_the_environment_top_made_writable_by_others_is_asked(workspace: Path) -> None:
    conf = _venv(workspace)
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, program(workspace, "pipconf", "os.chmod('.venv/pip.conf', 0o666)\n"))
    mode = stat.S_IMODE(conf.stat().st_mode)
    assert person.questions or not mode & 0o022, (
        f".venv/pip.conf (read by every pip run in the environment) made {oct(mode)} unasked: "
        f"{out.get('transaction')} {(out.get('changes') or {}).get('summary')}"
    )


async def test_probe_pip_conf_written_at_the_environment_top(workspace: Path) -> None:
    """(Probe, not a claim of the brief: a new pip.conf naming another index, written by the command.)"""
    conf = _venv(workspace)
    conf.unlink()
    made = "open('.venv/pip.conf', 'w').write('[global]\\nindex-url = http://127.0.0.1:9/simple\\n')\n"
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, program(workspace, "pipidx", made))
    assert person.questions or not conf.exists(), (
        f".venv/pip.conf naming another package index written unasked: {out.get('transaction')}"
    )
