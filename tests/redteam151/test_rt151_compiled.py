"""Red team 151: compiled files a git hook runs, found where the hook tells the interpreter to look by an exported
variable, that the hook reader does not name. One shell_exec command (the person declines every question) rewrites or
makes the file with no question; the user's next ``git commit``, outside the box, runs it.

F5  ``export CLASSPATH=lib/checks.jar`` then ``java com.example.Check``: the jar is read as a directory to look for
    ``com.example.Check`` in (``lib/checks.jar/com.example.Check.*``), never as the archive java loads the class from;
    the jar itself is not named and is rewritten. (``java -cp lib/checks.jar …`` names it: the word is on the line.)
F6  ``export PYTHONPYCACHEPREFIX=.pycache`` then ``python3 -m tools.check``: Python takes the module's compiled copy
    from ``.pycache/<absolute directory>/check.cpython-3XY.pyc``; an unchecked-hash ``.pyc`` there runs in place of
    ``tools/check.py`` (which is untouched). The compiled copy in ``tools/__pycache__`` is protected; the one under
    the prefix is not.

Answered by class (``hook_words.search_files``): an archive a search path names is a file the hook runs; a directory
Python reads compiled modules from (``PYTHONPYCACHEPREFIX``, ``-X pycache_prefix``) counts whole.

Controls: ``java -cp lib/checks.jar``; the default ``__pycache__`` copy: refused or asked, nothing runs. Hooks and
payloads (which write a marker file only) travel as data: rt151_compiled.json.
"""

from __future__ import annotations

import json
import os
import py_compile
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.planted import git, landed, plant

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing"),
]

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt151_compiled.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
ATTACKS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")


def _jar(source: str, build: Path) -> bytes:
    build.mkdir(parents=True, exist_ok=True)
    (build / "Check.java").write_text(source)
    subprocess.run(["javac", "-d", str(build / "classes"), str(build / "Check.java")], check=True)
    subprocess.run(["jar", "cf", str(build / "checks.jar"), "-C", str(build / "classes"), "com"], check=True)
    return (build / "checks.jar").read_bytes()


def _pyc(source: str, build: Path) -> bytes:
    build.mkdir(parents=True, exist_ok=True)
    (build / "check.py").write_text(source)
    out = build / "check.pyc"
    py_compile.compile(
        str(build / "check.py"), cfile=str(out), doraise=True,
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )  # fmt: skip
    return out.read_bytes()


def _repo(workspace: Path, spec: dict[str, Any], tmp_path: Path) -> None:
    for name, text in spec["files"].items():
        path = workspace / str(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(str(text))
    if spec["kind"] == "jar":
        (workspace / "lib").mkdir(exist_ok=True)
        (workspace / "lib" / "checks.jar").write_bytes(_jar(str(DATA["java"]["benign"]), tmp_path / "benign"))
    git(workspace, "init", "-q")
    hook = workspace / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text(f"#!/bin/sh\n{spec['hook']}\n")
    hook.chmod(0o755)
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "--no-verify", "-m", "init")


async def _git_runs(workspace: Path, tmp_path: Path, case: str) -> tuple[bool, str]:
    spec, marker = DATA["cases"][case], tmp_path / "MARKER-hook-ran"
    tools = ["javac", "jar", "java"] if spec["kind"] == "jar" else ["python3"]
    if missing := [tool for tool in tools if shutil.which(tool) is None]:
        pytest.skip(f"not installed: {missing}")
    if spec["kind"] == "jar":
        data = _jar(str(DATA["java"]["payload"]).replace("{marker}", str(marker)), tmp_path / "payload")
    else:
        data = _pyc(str(DATA["python_payload"]).replace("{marker}", str(marker)), tmp_path / "payload")
    _repo(workspace, spec, tmp_path)
    top = os.path.realpath(workspace)
    tag = sys.implementation.cache_tag
    planted = str(spec["planted"]).replace("{top}", top).replace("{tag}", tag)
    env = {"PATH": os.environ["PATH"]}
    git(workspace, "commit", "-q", "--allow-empty", "-m", "works before", env=env)
    assert not marker.exists()
    person, out = await plant(workspace, {planted: data})
    git(workspace, "commit", "-q", "--allow-empty", "-m", "next", env=env)
    why = (f"{planted} (run by the user's git) landed with no question: questions={person.questions} "
           f"transaction={out.get('transaction')} landed={landed(out)}")  # fmt: skip
    return marker.exists(), why


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_compiled_file_named_as_the_reader_reads_it(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await _git_runs(workspace, tmp_path, case)
    assert not ran, why


@pytest.mark.parametrize("case", ATTACKS)
async def test_attack_compiled_file_found_by_an_exported_variable_runs_later(
    workspace: Path, tmp_path: Path, case: str
) -> None:
    ran, why = await _git_runs(workspace, tmp_path, case)
    assert not ran, why
