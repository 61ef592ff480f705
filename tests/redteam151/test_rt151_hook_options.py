"""Red team 151: files a git hook runs that the hook reader neither names, nor names by a pattern, nor counts whole,
because the interpreter is told what to load otherwise than on its own command line (an options variable the hook
exports), by a name in code given inline, or by a bare package name it resolves through ``node_modules``. One
shell_exec command (the person declines every question) writes the file with no question; the user's next
``git commit``, outside the box, runs it.

F1  ``export NODE_OPTIONS="--require ./tools/setup"`` (or ``--require=./tools/setup.js``) then ``node x.js``: node
    preloads ``tools/setup.js`` in every node the hook starts. The reader reads ``-r`` only on a line whose first word
    is an interpreter; the exported variable's value names ``tools/setup`` as written (no suffix, no pattern) or,
    attached with ``=``, nothing at all.
F2  Perl told to load a module otherwise than ``-MName`` on its line: ``export PERL5OPT=-MCheck`` with
    ``PERL5LIB=tools``; ``perl -Itools -e 'require Check'`` / ``-e 'use Check'`` (Python code's imports are read:
    red team 149 F1; Perl code's are not). ``tools/Check.pm`` is made and runs.
F3  node's ``-r``/``--import`` of a bare package name (``node -r dotenv/config``, ``node --import tsx``: the usual
    way to run TypeScript or load .env in a hook) resolves through ``node_modules`` (a package's file, its
    ``exports``); the reader looks for ``dotenv/config`` from the top, and ``node_modules`` is scratch: the
    package's file is rewritten with no question.
F4  A hook written in JavaScript that requires a project file by a name without suffix
    (``require(path.resolve('tools/check'))``): red team 146 F1's completion, in a Node hook's text.

Answered by class: an interpreter's options given in its environment read as its own command line
(``hook_interpreters.options_lines``); module names in Perl code (``use``/``require``) as ``-M``; a bare package a node
program loads from ``node_modules`` (its ``main`` and ``exports`` too); any path a hook text writes with a ``/`` that
names no file completed with any suffix a program may add.

Controls: the same files named as the reader reads them (``-r`` on node's own line, ``-MCheck``, a path with its
suffix): refused or asked, nothing runs. Hooks and payloads (which write a marker file only) travel as data:
rt151_hook_options.json.
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

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt151_hook_options.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
ATTACKS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")
TOOLS = ("node", "perl")


async def _git_runs(workspace: Path, tmp_path: Path, case: str) -> tuple[bool, str]:
    return await case_runs(workspace, tmp_path, DATA, case, TOOLS)


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_file_named_as_the_reader_reads_it(workspace: Path, tmp_path: Path, case: str) -> None:
    ran, why = await _git_runs(workspace, tmp_path, case)
    assert not ran, why


@pytest.mark.parametrize("case", ATTACKS)
async def test_attack_file_the_interpreter_is_told_to_load_runs_later(
    workspace: Path, tmp_path: Path, case: str
) -> None:
    ran, why = await _git_runs(workspace, tmp_path, case)
    assert not ran, why
