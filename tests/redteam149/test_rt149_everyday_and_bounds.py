"""Red team 149, LOW findings of red team 146's answer (hook_words.resolves, FILE_NAME).

F8  False refusal: every word after an interpreter that begins a hook line now names a directory's entry files
    (``index.js``, ``index.mjs``, ``index.cjs``, ``package.json``, ``__main__.py``), whether the interpreter runs it
    or only passes it on as data: ``node scripts/check-headers.js lib`` makes ``lib/index.js`` (the package's main
    source) and ``lib/package.json`` protected; ``python3 -m mypy src`` does the same for ``src/index.js``. An
    ordinary edit of the project's main file through shell_exec is refused. Control: a neighbour (``lib/util.js``)
    lands.
F9  Judge time: a file's name alone (``FILE_NAME``) is now named at each occurrence and expanded from every place
    the text changes to, with no memo (the word memo ``files`` covers only the look-up): a 240 KiB hook of
    ``x.y`` lines after 20 ``cd`` lines takes about 60 s per ``run_by_hooks`` (1.4 s before the commit) and a
    shell_exec call that modifies one ordinary file about 180 s. The hook is the user's (a command cannot write it),
    so LOW. (Answered: a script's name by its suffix only; each name looked up once a text — counted here.)

F8 answered: an interpreter's command line read as it reads it (``hook_interpreters.interpreter_files``): the
words after its script are the script's arguments.

Hook texts travel as data: rt149_everyday.json.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from mcp_server_guard import hook_runs
from support.planted import landed, plant, repo

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt149_everyday.json").read_text())
CASES = sorted(DATA["false_refusals"])
needs_box = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")


async def _edit_lands(workspace: Path, case: str, name: str) -> tuple[bool, str]:
    spec = DATA["false_refusals"][case]
    repo(workspace, str(spec["hook"]), {str(k): str(v) for k, v in spec["files"].items()})
    person, out = await plant(workspace, {name: "module.exports = 3;\n"})
    why = f"{name}: questions={person.questions} changes={(out.get('changes') or {}).get('paths')}"
    return name in landed(out) and not person.questions, why


@needs_box
@pytest.mark.anyio
@pytest.mark.parametrize("case", CASES)
async def test_control_a_neighbour_of_the_main_file_lands(workspace: Path, case: str) -> None:
    lands, why = await _edit_lands(workspace, case, str(DATA["false_refusals"][case]["control"]))
    assert lands, why


@needs_box
@pytest.mark.anyio
@pytest.mark.parametrize("case", CASES)
async def test_attack_an_everyday_edit_of_the_main_file_lands(workspace: Path, case: str) -> None:
    lands, why = await _edit_lands(workspace, case, str(DATA["false_refusals"][case]["edited"]))
    assert lands, why


def _lookups(root: Path, lines: int, monkeypatch: pytest.MonkeyPatch) -> int:
    """How many times reading a hook of ``lines`` repeated lines after 20 ``cd`` lines looks a name up in every
    place (``hook_runs._expanded``): counted, not timed (speed lives in bench/)."""
    spec = DATA["slow_hook"]
    hooks = root / ".git" / "hooks"
    hooks.mkdir(parents=True)
    text = "".join(f"cd d{i}\n" for i in range(int(spec["cd_lines"]))) + str(spec["line"]) * lines
    (hooks / "pre-commit").write_text("#!/bin/sh\n" + text)
    calls = 0
    expanded = hook_runs._expanded

    def counted(word: str, places: list[str], home: str | None) -> list[str]:
        nonlocal calls
        calls += 1
        return expanded(word, places, home)

    monkeypatch.setattr(hook_runs, "_expanded", counted)
    hook_runs.run_by_hooks([str(hooks)], str(root), None)
    return calls


def test_control_a_small_hook_is_read_with_few_lookups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _lookups(tmp_path, 100, monkeypatch) < 200


def test_attack_a_large_hook_looks_each_name_up_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # (red team 149 F9: each occurrence of a name was looked up from every place: 60,000 lines took a minute)
    calls = _lookups(tmp_path, int(DATA["slow_hook"]["lines"]), monkeypatch)
    assert calls < 200, f"{calls} look-ups for one repeated line"
