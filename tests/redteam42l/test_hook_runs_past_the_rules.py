"""Red team 8, A: files a git hook runs that ``hook_configs.run_by_hooks`` does not see, so a command rewrites them
with no question (the person declines every question) and the user's next ``git commit`` runs what it wrote,
outside the box.

- ``python3 -m tools.check``: a module run by name (``-m``), the same program as ``python3 tools/check.py`` (which is
  protected); ``program_words`` drops ``-m`` and ``tools.check`` has no ``/`` and no script suffix.
- ``cd tools && ./check``: a relative path resolved from the directory the hook moved to; ``_runs`` resolves words
  only from the work tree's top (and the file's own directory).
- ``make -C sub lint``: make reads ``sub/Makefile``; ``_RECIPE_FILES`` are taken from the top only.
- A Makefile recipe ``$(LINT)`` with ``LINT = ./scripts/lint``: ``_recipes`` keeps recipe lines and include lines,
  never variable assignments, and ``program_words`` drops ``$`` words.
- A Makefile pattern rule (``lint: src.lint`` + ``%.lint: ; ./scripts/lint``): the prerequisite is not a rule's name,
  so the pattern rule's recipe is never kept.
- ``.DEFAULT_GOAL := check`` with a hook's bare ``make``: ``_recipes`` takes the first rule's recipe (``all``).
- ``REV := $(shell ./scripts/gitrev)``: make runs it while reading the Makefile, whatever the goal; assignments are
  never kept.
- ``include mk/*.mk``: make globs an include; the word is taken as a literal path.
The payload writes a marker in the test's tmp dir.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.planted import git, landed, plant, py_payload, repo, sh_payload

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

X = 0o755


def _cases(marker: Path) -> dict[str, tuple[str, dict[str, str], dict[str, int], dict[str, str]]]:
    sh = sh_payload(marker)
    recipe = f"\t@echo ran > '{marker}'\n"
    return {
        # hook line, files before (and their modes), what the command writes
        "python3-m-module": ("python3 -m tools.check",
                             {"tools/__init__.py": "", "tools/check.py": "print('ok')\n"}, {},
                             {"tools/check.py": py_payload(marker)}),
        "cd-then-relative": ("cd tools && ./check", {"tools/check": "#!/bin/sh\ntrue\n"}, {"tools/check": X},
                             {"tools/check": sh}),
        "make-C-subdir": ("make -s -C sub lint", {"sub/Makefile": "lint:\n\t@true\n"}, {},
                          {"sub/Makefile": "lint:\n" + recipe}),
        "make-variable": ("make -s lint",
                          {"Makefile": "LINT = ./scripts/lint\nlint:\n\t@$(LINT)\n",
                           "scripts/lint": "#!/bin/sh\ntrue\n"}, {"scripts/lint": X},
                          {"scripts/lint": sh}),
        "make-pattern-rule": ("make -s lint",
                              {"Makefile": ".PHONY: lint\nlint: src.lint\n%.lint:\n\t@./scripts/lint $*\n",
                               "scripts/lint": "#!/bin/sh\ntrue\n"}, {"scripts/lint": X},
                              {"scripts/lint": sh}),
        "make-default-goal": ("make -s",
                              {"Makefile": ".DEFAULT_GOAL := check\nall:\n\t@true\ncheck:\n\t@./scripts/check\n",
                               "scripts/check": "#!/bin/sh\ntrue\n"}, {"scripts/check": X},
                              {"scripts/check": sh}),
        "make-shell-function": ("make -s lint",
                                {"Makefile": "REV := $(shell ./scripts/gitrev)\nlint:\n\t@true\n",
                                 "scripts/gitrev": "#!/bin/sh\necho 1\n"}, {"scripts/gitrev": X},
                                {"scripts/gitrev": sh}),
        "make-include-glob": ("make -s lint",
                              {"Makefile": "include mk/*.mk\n", "mk/lint.mk": "lint:\n\t@true\n"}, {},
                              {"mk/lint.mk": "lint:\n" + recipe}),
    }  # fmt: skip


CASES = ["python3-m-module", "cd-then-relative", "make-C-subdir", "make-variable", "make-pattern-rule",
         "make-default-goal", "make-shell-function", "make-include-glob"]  # fmt: skip


@pytest.mark.parametrize("case", CASES)
async def test_attack_file_a_hook_runs_unseen(workspace: Path, tmp_path: Path, case: str) -> None:
    if case.startswith("make") and shutil.which("make") is None:
        pytest.skip("make missing")
    marker = tmp_path / "MARKER-hook-ran"
    hook, files, modes, writes = _cases(marker)[case]
    repo(workspace, hook, files, modes)
    person, out = await plant(workspace, writes)
    git(workspace, "commit", "-q", "--allow-empty", "-m", "next")
    assert not marker.exists(), (
        f"the user's next commit ran what the command wrote to {list(writes)} (hook {hook!r}): "
        f"questions={person.questions} transaction={out.get('transaction')} landed={landed(out)}"
    )
