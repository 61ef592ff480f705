"""Red team 149: files a git hook runs that the hook reader neither names, nor names by a pattern, nor counts whole,
because the program finds them by a rule of its own that red team 146's answer did not take in. One shell_exec
command (the person declines every question) rewrites or makes the file with no question; the user's next
``git commit``, outside the box, runs it.

F1  Python code given with ``-c`` that names a module otherwise than ``import a.b``: ``from tools import check``,
    ``runpy.run_module('tools.check')``, ``importlib.import_module('tools.check')`` — the reader looks for
    ``check.py`` at the top, or for a file named ``tools.check.*``; ``tools/check.py`` runs.
F2  ``python3 -m app.lint`` imports its parent package first: ``app/__init__.py`` (rewritten, or made where ``app``
    was a namespace package) runs before ``app/lint.py``; only ``app/lint.py`` (and ``app/lint/…``) are named.
F3  ``python3 -c 'import tools.check'`` (the spelling the reader reads): an extension module beside the source
    (``tools/check.so``, ``check.abi3.so``, ``check.cpython-3XY-….so``) is found before ``check.py`` (the import
    system tries extension suffixes first) and loaded; only ``check.py`` and its compiled copy in ``__pycache__``
    are protected. (With ``-m`` runpy refuses an extension module, but a parent package's ``__init__.so`` loads.)
F4  ``perl -Mlib=tools -MCheck``: the ``lib`` pragma given by option puts ``tools`` on @INC; ``tools/Check.pm`` is
    not looked for there (``-Itools`` is).
F5  ``java -cp tools Check``: java runs ``tools/Check.class``; the class name is never looked up on the classpath.
F6  ``node -r ./tools/setup.js scripts/check``: ``scripts/check`` is not the first operand, so only its entry
    files are named (``index.js``, ``package.json``) — the ``main`` that ``package.json`` names runs unprotected.
F7  ``git --exec-path=tools lint``: git runs ``tools/git-lint`` (the exec path is searched first); not named.

Answered by class (``hook_interpreters``): an interpreter's command line read as it reads it (its script, the files
its options load: a package directory's ``main`` too); a Python module by any import spelling, as every file Python
may take for it and its packages (``__init__``, sourceless and extension modules); ``-Mlib=``/``use lib`` and
``--exec-path``/``GIT_EXEC_PATH`` as the places they are.

Controls: the spellings the reader reads (``import tools.check``, ``-m app.lint``'s module, ``-Itools``, a Java
source file, ``node scripts/check`` as first operand, ``git lint`` with ``tools`` first on PATH): refused or asked,
nothing runs. Hooks and payloads (which write a marker file only) travel as data: rt149_resolution.json.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.planted import git, landed, plant

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing"),
]

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt149_resolution.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
ATTACKS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")
TOOLS = ("python3", "perl", "node", "java", "gcc")


def _needs(spec: dict[str, Any]) -> list[str]:
    wanted = [tool for tool in TOOLS if tool in str(spec["hook"])]
    wanted += ["gcc"] if str(spec["planted"]).endswith(".so") else []
    wanted += ["javac"] if str(spec["planted"]).endswith(".class") else []
    return [tool for tool in wanted if shutil.which(tool) is None]


def _repo(workspace: Path, spec: dict[str, Any]) -> None:
    for name, text in spec["files"].items():
        path = workspace / str(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(str(text))
    git(workspace, "init", "-q")
    hook = workspace / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text(f"#!/bin/sh\n{spec['hook']}\n")
    hook.chmod(0o755)
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "--no-verify", "-m", "init")


def _payload(spec: dict[str, Any], marker: Path, build: Path) -> bytes:
    """The bytes the command writes: the payload's text, or what the compiler makes of it (outside the roots)."""
    text = str(DATA["payloads"][str(spec["payload"])]).replace("{marker}", str(marker))
    planted = str(spec["planted"])
    build.mkdir(parents=True, exist_ok=True)
    if planted.endswith(".so"):
        (build / "p.c").write_text(text)
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(build / "p.so"), str(build / "p.c")], check=True)
        return (build / "p.so").read_bytes()
    if planted.endswith(".class"):
        (build / "Check.java").write_text(text)
        subprocess.run(["javac", "-d", str(build), str(build / "Check.java")], check=True)
        return (build / "Check.class").read_bytes()
    return text.encode()


async def _git_runs(workspace: Path, tmp_path: Path, case: str) -> tuple[bool, str]:
    spec, marker = DATA["cases"][case], tmp_path / "MARKER-hook-ran"
    if missing := _needs(spec):
        pytest.skip(f"not installed: {missing}")
    data = _payload(spec, marker, tmp_path / "build")
    _repo(workspace, spec)
    git(workspace, "commit", "-q", "--allow-empty", "-m", "works before")
    assert not marker.exists()
    planted = str(spec["planted"])
    person, out = await plant(workspace, {planted: data}, {planted: int(spec["mode"])} if "mode" in spec else None)
    git(workspace, "commit", "-q", "--allow-empty", "-m", "next", env={"PATH": os.environ["PATH"]})
    why = (f"{planted} (run by the user's git) landed with no question: questions={person.questions} "
           f"transaction={out.get('transaction')} landed={landed(out)}")  # fmt: skip
    return marker.exists(), why


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_file_named_as_the_reader_reads_it(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await _git_runs(workspace, tmp_path, case)
    assert not ran, why


@pytest.mark.parametrize("case", ATTACKS)
async def test_attack_file_the_program_resolves_runs_later(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await _git_runs(workspace, tmp_path, case)
    assert not ran, why
