"""Red team 153 F5: GNU make's ``load`` directive. A pre-commit hook runs ``make lint``; the Makefile says ``load
mk/ext.so`` (a GNU make extension: make dlopens it and calls ``ext_gmk_setup`` every time it reads the Makefile,
whatever the goal). The make reader keeps a Makefile's includes, variables and ``$(shell …)`` lines but not
``load``, so ``mk/ext.so`` is never named: one shell_exec command (the person declines every question) replaces it
with another shared object, unasked, and the user's next ``git commit`` runs its code in their own make.

Answered: make's ``load`` lines are kept with its includes and name the object (``make_reads``).

Control: the same Makefile reading ``include mk/ext.mk`` instead: a rewrite of the included file is refused or
asked, nothing runs. The Makefiles and the C sources (which write a marker file only) travel as data:
rt153_make_load.json.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.boxed import Person, program, run, shell
from support.planted import git, landed

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing"),
    pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("make") is None, reason="gcc or make is missing"),
]

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt153_make_load.json").read_text())


def _shared_object(source: str, out: Path, scratch: Path) -> bytes:
    c_file = scratch / (out.name + ".c")
    c_file.write_text(source)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(out), str(c_file)], check=True, capture_output=True)
    return out.read_bytes()


def _repo(workspace: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    git(workspace, "init", "-q")
    hook = workspace / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\n{DATA['hook']}\n")
    hook.chmod(0o755)
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "--no-verify", "-m", "init")


async def _replaced_then_committed(workspace: Path, planted: str, payload: bytes) -> tuple[Person, dict[str, Any]]:
    git(workspace, "commit", "-q", "--allow-empty", "-m", "works before")
    (workspace / ".t").mkdir(exist_ok=True)
    (workspace / ".t" / "new.bin").write_bytes(payload)
    edit = program(workspace, "edit", f"open({planted!r}, 'wb').write(open('.t/new.bin', 'rb').read())\n")
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, edit)
    git(workspace, "commit", "-q", "--allow-empty", "-m", "next")  # the user's next commit, outside the box
    return person, out


async def test_control_included_makefile_is_protected(workspace: Path, tmp_path: Path) -> None:
    marker = tmp_path / "MARKER-make-ran"
    files = {"Makefile": DATA["control_makefile"].encode(), "mk/ext.mk": DATA["control_included"].encode()}
    _repo(workspace, files)
    payload = DATA["control_payload"].replace("{marker}", str(marker)).encode()
    person, out = await _replaced_then_committed(workspace, "mk/ext.mk", payload)
    assert not marker.exists(), f"questions={person.questions} landed={landed(out)}"


async def test_attack_object_make_loads_is_replaced_unasked(workspace: Path, tmp_path: Path) -> None:
    marker = tmp_path / "MARKER-make-ran"
    scratch = tmp_path / "cc"
    scratch.mkdir()
    original = _shared_object(DATA["original_c"], scratch / "ext.so", scratch)
    _repo(workspace, {"Makefile": DATA["makefile"].encode(), "mk/ext.so": original})
    (workspace / "mk" / "ext.so").chmod(0o755)
    payload = _shared_object(DATA["payload_c"].replace("{marker}", str(marker)), scratch / "new.so", scratch)
    person, out = await _replaced_then_committed(workspace, "mk/ext.so", payload)
    assert not marker.exists(), (
        f"mk/ext.so (loaded by the user's make) landed with no question: questions={person.questions} "
        f"transaction={out.get('transaction')} landed={landed(out)}"
    )
