"""Red team 5b: the program a git hook runs is not protected — only the hook file is.

A hook is usually a one-line stub that runs the project's real check: ``exec ./scripts/pre-commit.sh``, ``python3
tools/precommit.py`` (as ``.husky/pre-commit`` files, pre-commit ``repo: local`` entries and lefthook ``run:`` lines
do). ``.git/hooks/**`` is protected and a hook that is a *link* protects its target, but the file a hook's text runs is
an ordinary path: a command that rewrites it lands with no question (the person declines everything) and the user's
next ``git commit`` runs it, outside the box. The payload writes a marker in the test's tmp dir.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell
from support.hooked import git

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

CASES = {  # the hook's body, the program it runs
    "exec-script-by-path": ("exec ./scripts/pre-commit", "scripts/pre-commit"),
    "python-tool": ("exec python3 tools/precommit.py", "tools/precommit.py"),
    # husky's usual pre-commit: npx runs the installed package's bin (node_modules is a scratch directory)
    "npx-lint-staged": ("exec npx --no lint-staged", "node_modules/.bin/lint-staged"),
}
HARMLESS = "#!/usr/bin/env python3\n"


@pytest.mark.parametrize("case", sorted(CASES))
async def test_attack_program_the_hook_runs_rewritten(workspace: Path, tmp_path: Path, case: str) -> None:
    body, script = CASES[case]
    marker = tmp_path / "MARKER-hook-program-ran"
    git(workspace, "init", "-q")
    hook = workspace / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\n{body}\n")
    hook.chmod(0o755)
    target = workspace / script
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(HARMLESS)
    target.chmod(0o755)
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "init")
    evil = HARMLESS + f"open({str(marker)!r}, 'w').write('ran')\n"
    edit = program(workspace, "edit", f"open({script!r}, 'w').write({evil!r})\n")
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, edit)
    git(workspace, "commit", "-q", "--allow-empty", "-m", "next")  # the user's next commit, outside any box
    assert not marker.exists(), (
        f"the user's commit ran what the command wrote; questions={person.questions} "
        f"transaction={out.get('transaction')} paths={out.get('changes', {}).get('paths')}"
    )
