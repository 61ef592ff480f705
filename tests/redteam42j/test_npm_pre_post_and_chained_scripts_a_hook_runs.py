"""Red team 6: the npm scripts a git hook runs are judged by name (``npm test`` → ``scripts.test``), but npm runs
more than the named script: ``pretest`` and ``posttest`` around ``npm test`` (``preX``/``postX`` around every ``npm
run X``), and whatever the named script itself runs by name (``"test": "npm run lint"`` → ``scripts.lint``). A
command that adds ``scripts.pretest``, or rewrites ``scripts.lint``, lands with no question (the person declines
every question), and the user's next ``git commit`` — the husky-init hook, ``npm test`` — runs it outside the box.
The payload writes a marker in the test's tmp dir.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.boxed import Person, run, shell
from support.hooked import git, hooked, sets_script, writes

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None or shutil.which("npm") is None, reason="bwrap or npm missing"),
]

CASES = {
    # the package.json before, the script the command sets
    "pretest-around-npm-test": ({"name": "app", "version": "1.0.0", "scripts": {"test": "node -v"}}, "pretest"),
    "posttest-around-npm-test": ({"name": "app", "version": "1.0.0", "scripts": {"test": "node -v"}}, "posttest"),
    "script-the-test-script-runs": (
        {"name": "app", "version": "1.0.0", "scripts": {"test": "npm run lint", "lint": "node -v"}},
        "lint",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
async def test_attack_script_npm_runs_around_or_under_the_hooks_script(
    workspace: Path, tmp_path: Path, case: str
) -> None:
    package, script = CASES[case]
    marker = tmp_path / "MARKER-hook-ran"
    hooked(workspace, "npm test", package)  # what `npx husky init` writes (.husky/pre-commit)
    edit = sets_script(workspace, script, writes(marker))
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, edit)
    # The user's next commit, outside any box (the hook is the project's own, unchanged).
    git(workspace, "commit", "-q", "--allow-empty", "-m", "next")
    assert not marker.exists(), (
        f"the user's next commit ran scripts.{script} the command wrote: questions={person.questions} "
        f"transaction={out.get('transaction')}"
    )
