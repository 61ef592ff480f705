"""A directory a hook puts on PATH (or a language's search path) that the hook reader cannot name — a variable the
hook never gives a value, a command's output (``$(git config --get hooks.toolsdir)``, ``` `cat .toolsdir` ```,
``$(npm bin)``) — counts as any directory of the work tree: a program the hook then runs by its name alone (or a
module it loads) is protected wherever in the tree a file of that name is made or changed (``hook_words.ANYWHERE``,
``git_dirs._matches``). Threat (red team 161's note, left by the last session): an entry the reader dropped named
nothing, so each new spelling of a place was a way to plant ``tools/lint-check`` for the user's next ``git
commit``. A file named otherwise still lands. Hooks and payloads travel as data (unknown_path_entries.json)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from mcp_server_guard.git_dirs import _hooks_rule
from mcp_server_guard.hook_runs import run_by_hooks
from support.hook_cases import case_runs
from support.planted import git, landed, plant, repo

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "unknown_path_entries.json").read_text())
CASES = sorted(DATA["cases"])
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")


@needs_bwrap
@pytest.mark.anyio
@pytest.mark.parametrize("case", CASES)
async def test_attack_a_program_on_a_path_entry_the_reader_cannot_name_is_planted(
    workspace: Path, tmp_path: Path, case: str
) -> None:
    ran, why = await case_runs(workspace, tmp_path, DATA, case)
    assert not ran, why


@needs_bwrap
@pytest.mark.anyio
async def test_a_file_not_named_like_a_program_the_hook_runs_still_lands(workspace: Path) -> None:
    hook = 'export PATH="$(git config --get hooks.toolsdir):$PATH"\nlint-check'
    repo(workspace, hook, {"tools/lint-check": "#!/bin/sh\ntrue\n", "src/app.py": "x = 1\n"})
    git(workspace, "config", "hooks.toolsdir", "tools")
    _person, out = await plant(workspace, {"tools/README.md": "notes\n", "src/app.py": "x = 2\n"})
    assert sorted(landed(out)) == ["src/app.py", "tools/README.md"], out
    assert (workspace / "src" / "app.py").read_text() == "x = 2\n"


def _found(root: Path, hook: str) -> list[str]:
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "hooks" / "pre-commit").write_text(f"#!/bin/sh\n{hook}\n")
    return run_by_hooks([str(root / ".git" / "hooks")], os.path.realpath(root), None)


@pytest.mark.parametrize(
    "hook",
    [
        'export PATH="$SOMEWHERE/bin:$PATH"\nlint-check',
        'PATH="$(npm bin):$PATH" lint-check',
        'export PATH="$PATH:$(go env GOPATH)/bin"\nlint-check',
        'D="$(cat .toolsdir)"\nPATH="$D:$PATH"\nlint-check',
    ],
)
def test_a_program_on_an_unknown_path_entry_counts_anywhere_in_the_work_tree(tmp_path: Path, hook: str) -> None:
    found, real = _found(tmp_path, hook), os.path.realpath(tmp_path)
    for path in ("lint-check", "tools/lint-check", "a/b/c/lint-check", "node_modules/.bin/lint-check"):
        assert _hooks_rule(f"{real}/{path}", found) is not None, (path, found)
    assert _hooks_rule(f"{real}/tools/lint-check.md", found) is None
    assert _hooks_rule(f"{real}/src/app.py", found) is None


def test_a_module_on_an_unknown_search_path_counts_anywhere_in_the_work_tree(tmp_path: Path) -> None:
    found = _found(tmp_path, 'PYTHONPATH="$(git config --get hooks.lib)" python3 -m app.lint')
    real = os.path.realpath(tmp_path)
    assert _hooks_rule(f"{real}/tools/app/lint.py", found) is not None, found
    assert _hooks_rule(f"{real}/app/lint.py", found) is not None, found
    assert _hooks_rule(f"{real}/tools/app/other.py", found) is None


def test_the_path_itself_and_home_name_no_place_in_the_work_tree(tmp_path: Path) -> None:
    found = _found(tmp_path, 'export PATH="$HOME/.local/bin:$PATH:${PATH}"\nlint-check')
    assert _hooks_rule(f"{os.path.realpath(tmp_path)}/tools/lint-check", found) is None, found
