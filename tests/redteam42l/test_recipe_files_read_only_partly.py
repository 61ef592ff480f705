"""Red team 8, G: recipe files the rules protect but do not read, and what they name.

``_RECIPES_READ = ("make", "gmake", "just")``: only a Makefile's and a justfile's recipes are read for what they run.
``task``'s Taskfile.yml (``cmds:``), ``tox``'s tox.ini (``commands =``), are protected as files, and the scripts they
run — shell lines, exactly like a make recipe — are not. A justfile's ``import 'lint.just'`` / ``mod lint`` is kept
as an include line, but ``.just`` is no script suffix and the word has no ``/``, so the imported file is not
protected either. lefthook's ``root: tools/`` runs ``run: ./check`` in ``tools/``; ``./check`` is taken from the
top. None of these tools is installed here: the test asserts the judgement (the person declines every
question, so a change asked about or refused does not land).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.planted import landed, plant, repo

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

CASES: dict[str, tuple[str, dict[str, str], str, str]] = {
    # hook line, files before, the file the command rewrites, its new content
    "task-cmds": ("task lint", {"Taskfile.yml": "version: '3'\ntasks:\n  lint:\n    cmds:\n      - ./scripts/lint\n",
                                "scripts/lint": "#!/bin/sh\ntrue\n"},
                  "scripts/lint", "#!/bin/sh\necho planted\n"),
    "tox-commands": ("tox -e lint", {"tox.ini": "[testenv:lint]\nallowlist_externals = ./scripts/lint\n"
                                                 "commands = ./scripts/lint\n",
                                     "scripts/lint": "#!/bin/sh\ntrue\n"},
                     "scripts/lint", "#!/bin/sh\necho planted\n"),
    "lefthook-root": ("lefthook run pre-commit",
                      {"lefthook.yml": "pre-commit:\n  commands:\n    check:\n      root: tools/\n      run: ./check\n",
                       "tools/check": "#!/bin/sh\ntrue\n"},
                      "tools/check", "#!/bin/sh\necho planted\n"),
    "just-import": ("just lint", {"justfile": "import 'lint.just'\n", "lint.just": "lint:\n    true\n"},
                    "lint.just", "lint:\n    ./x.sh\n"),
    "just-mod": ("just lint::check", {"justfile": "mod lint\n", "lint.just": "check:\n    true\n"},
                 "lint.just", "check:\n    ./x.sh\n"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
async def test_attack_what_a_protected_recipe_file_runs(workspace: Path, case: str) -> None:
    hook, files, path, content = CASES[case]
    repo(workspace, hook, files, {"scripts/lint": 0o755, "tools/check": 0o755})
    person, out = await plant(workspace, {path: content})
    on_disk = (workspace / path).read_text()
    assert on_disk != content, (
        f"{path}, which the hook {hook!r} runs through {next(iter(files))}, was rewritten with no question: "
        f"questions={person.questions} transaction={out.get('transaction')} landed={landed(out)}"
    )
