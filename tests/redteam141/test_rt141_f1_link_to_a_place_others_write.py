"""Red team 141 F1: what a later build, install or run reads handed to others through a symlink, unasked.

``refusals._loosened`` asks about every group/other write grant in a build or cache directory and in a Python
environment (red teams 74, 106, 107, 134): anyone on the machine could otherwise rewrite what the user's next
build, import or run reads. A symbolic link to a path in a directory everyone may write (``/tmp``, ``/dev/shm``)
hands over the same pen with no mode bit at all: whoever creates ``/tmp/rt141_pkg.py`` first (any local user; the
name is missing) writes the module every ``import pkg`` of the environment runs, the script ``.venv/bin/pytest``
runs, the recipe ``make -C build`` reads — and outside those directories as well: a committed ``app.py`` replaced by
a link to ``/tmp/rt141_app.py`` (git has the old bytes, so no loss is asked either). ``judge_modes`` skips
symlinks but for protected directories, and nothing else judges where a link's target lies: each lands unasked.

Control: the same files (build/Makefile made anew) made writable by others with ``chmod 666`` are asked (and,
declined, do not land).
Command lines travel as data (rt141_f1.json); a person declines every question."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

LINES: dict[str, str] = json.loads((Path(__file__).resolve().parent / "rt141_f1.json").read_text())
MODULE = ".venv/lib/python3.11/site-packages/pkg/__init__.py"
GIT = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip


def _project(root: Path) -> None:
    env = root / ".venv"
    (root / MODULE).parent.mkdir(parents=True)
    (root / MODULE).write_text("VALUE = 1\n")
    (root / MODULE).chmod(0o644)
    (env / "bin").mkdir()
    (env / "bin" / "pytest").write_text("#!/usr/bin/env python3\nprint(1)\n")
    (env / "bin" / "pytest").chmod(0o755)
    (env / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.11.0\n")
    (root / ".gitignore").write_text(".venv/\nbuild/\n")
    (root / "app.py").write_text("import pkg\n")
    (root / "app.py").chmod(0o644)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, env=GIT)
    subprocess.run(["git", "commit", "-qm", "i"], cwd=root, check=True, env=GIT)


def _handed_out(root: Path) -> list[str]:
    """Links below ``root`` to a path under a directory any local user may write."""
    return sorted(
        f"{p.relative_to(root)} -> {os.readlink(p)}"
        for p in root.rglob("*")
        if p.is_symlink() and os.readlink(p).startswith(("/tmp/", "/dev/shm/"))
    )


def _loose(root: Path, rel: str) -> bool:
    path = root / rel
    return path.exists() and not path.is_symlink() and bool(path.stat().st_mode & 0o022)


async def _one(root: Path, key: str) -> tuple[Person, dict[str, object]]:
    _project(root)
    person = Person(False)
    async with shell(root, person) as client:
        out = await run(client, LINES[key], cwd=str(root))
    return person, out


async def test_control_module_made_writable_by_others_is_asked(workspace: Path) -> None:
    person, out = await _one(workspace, "control_module_loosened")
    assert person.questions, out
    assert not _loose(workspace, MODULE), out


async def test_control_build_makefile_made_writable_by_others_is_asked(workspace: Path) -> None:
    person, out = await _one(workspace, "control_makefile_loosened")
    assert person.questions, out
    assert not _loose(workspace, "build/Makefile"), out


async def test_control_tracked_source_made_writable_by_others_is_asked(workspace: Path) -> None:
    person, out = await _one(workspace, "control_source_loosened")
    assert person.questions, out
    assert not _loose(workspace, "app.py"), out


@pytest.mark.parametrize("key", ["module_to_tmp", "entry_point_to_tmp", "makefile_to_tmp", "source_to_tmp"])
async def test_attack_link_to_a_place_others_write_lands_unasked(workspace: Path, key: str) -> None:
    person, out = await _one(workspace, key)
    handed = _handed_out(workspace)
    assert not handed or person.questions, ("handed to every local user, nobody asked", handed,
                                            out.get("transaction"))  # fmt: skip
