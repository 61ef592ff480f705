"""Red team 6: a git hook's own text is read for the files it runs (``git_dirs._run_by_hooks``: ``.git/hooks/*``,
``core.hooksPath`` directories, ``.husky/*``), but the hook managers' configs that say what the hook runs are not:
lefthook's ``lefthook.yml`` (``run: ./scripts/lint.sh``) and pre-commit's ``.pre-commit-config.yaml`` (a ``repo:
local`` hook's ``entry: ./tools/check.sh``) are protected files, and the scripts they name are ordinary ones. (Only
their package.json scripts are followed: ``hook_configs.hook_texts``.) A command rewriting the named script lands
with no question (the person declines every question); the user's next ``git commit`` (lefthook's / pre-commit's
hook) runs it. lefthook and pre-commit are not installed here: the test checks that nothing is asked and the script
lands."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell
from support.hooked import git

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

CONFIGS = {
    "lefthook": ("lefthook.yml", "pre-commit:\n  commands:\n    lint:\n      run: ./scripts/lint.sh\n",
                 "scripts/lint.sh", "#!/bin/sh\nlefthook run pre-commit \"$@\"\n"),
    "pre-commit": (".pre-commit-config.yaml",
                   "repos:\n- repo: local\n  hooks:\n  - id: check\n    name: check\n    entry: ./tools/check.sh\n"
                   "    language: script\n", "tools/check.sh",
                   "#!/usr/bin/env bash\nexec python3 -mpre_commit hook-impl --config=.pre-commit-config.yaml "
                   "--hook-type=pre-commit --hook-dir \"$(cd \"$(dirname \"$0\")\" && pwd)\" -- \"$@\"\n"),
}  # fmt: skip


@pytest.mark.parametrize("manager", sorted(CONFIGS))
async def test_attack_script_a_hook_managers_config_runs(workspace: Path, tmp_path: Path, manager: str) -> None:
    config, text, script, hook = CONFIGS[manager]
    marker = tmp_path / "MARKER-hook-ran"
    (workspace / config).write_text(text)
    (workspace / script).parent.mkdir(parents=True)
    (workspace / script).write_text("#!/bin/sh\ntrue\n")
    (workspace / script).chmod(0o755)
    git(workspace, "init", "-q")
    # what `lefthook install` / `pre-commit install` write
    (workspace / ".git" / "hooks" / "pre-commit").write_text(hook)
    (workspace / ".git" / "hooks" / "pre-commit").chmod(0o755)
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "--no-verify", "-m", "init")
    edit = program(workspace, "edit", f"open({script!r}, 'w').write('#!/bin/sh\\necho ran > {marker}\\n')\n")
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, edit)
    landed = str(marker) in (workspace / script).read_text()
    assert person.questions or not landed, (
        f"{script}, which {config} has the user's next commit run, was rewritten with no question: "
        f"transaction={out.get('transaction')}"
    )
