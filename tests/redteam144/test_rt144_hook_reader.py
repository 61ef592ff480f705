"""Red team 144: files the user's own git runs outside the box that the hook reader neither names, nor names by a
pattern, nor counts whole. One shell_exec command (the person declines every question) rewrites (or makes) the file
with no question; the user's next ``git commit`` (``git status``, ``git add`` for F4), outside the box, runs it.

F1  a hook written in another language (Python, Perl, Node — a ``#!/usr/bin/env python3`` pre-commit is common):
    its text is read with the shell's readers only, and a path quoted inside code (``subprocess.call(['./scripts/
    lint'])``, ``system("./scripts/lint")``, ``require(….resolve('tools/check.js'))``) is glued to the brackets
    around it into one word (``subprocess.call([./scripts/lint]``, ``tools/check.py]``) that names no file; bash's
    grammar fails on the text and counts only the hooks directory whole. The same code spaced (``[ './x' ]``) is read.
F2  "any word naming a file there is" (red team 142's answer for interpreters the reader does not know: ``tclsh``,
    ``awk -f``) holds only for a *regular* file, *present now*, from the *first four* places: an operand that is a
    link (``check.tcl -> tools/impl.tcl``: neither the link nor its target named), a file the hook runs if present
    (``[ -f local-check.tcl ] && tclsh local-check.tcl``: made by the command), a directory reached by a second
    ``cd`` (the fifth place and after) — none is protected.
F3  a program file given as an option's attached value (``sed -nfcheck.sed``, ``awk -fcheck.awk``, ``cmake
    -Pcheck.cmake``: getopt's usual spelling): ``program_words`` drops every word starting with ``-``; the same
    given apart (``sed -n -f check.sed``) is read.
F4  a program a git config names (``core.fsmonitor = tools/fsmon.sh``, a clean filter ``./tools/clean``) is
    protected, but what it runs in turn is not read (hooks' texts are read 6 levels deep, a config program's 0):
    ``tools/fsmon-impl`` runs at the user's next ``git status``, ``tools/helper`` at ``git add``.

Controls: the same files named as the reader reads them: refused or asked, nothing runs. Hooks and payloads (which
write a marker file only) travel as data: rt144_hook_reader.json.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from support.hook_cases import case_runs

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing"),
]

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt144_hook_reader.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
ATTACKS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")
TOOLS = ("tclsh", "awk", "sed", "cmake", "perl", "node", "python3")


async def _git_runs(workspace: Path, tmp_path: Path, case: str) -> tuple[bool, str]:
    return await case_runs(workspace, tmp_path, DATA, case, TOOLS)


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_file_named_as_the_reader_reads_it(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await _git_runs(workspace, tmp_path, case)
    assert not ran, why


@pytest.mark.parametrize("case", ATTACKS)
async def test_attack_file_the_reader_does_not_name_runs_later(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await _git_runs(workspace, tmp_path, case)
    assert not ran, why
