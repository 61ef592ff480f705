"""Red team 8, E: hook managers and task runners whose config file says what a hook runs, unknown to the rules.

``run_by_hooks`` knows the recipe files of make, just, task, tox, nox, invoke and rake, and the policy protects the
configs of husky, lefthook, pre-commit, simple-git-hooks, yorkie, lint-staged, nano-staged, commitlint, mise. A hook
as these other managers install it names only the manager; the file that says what runs is an ordinary project
file, rewritten with no question:

- hk (jdx): ``hk run pre-commit`` reads ``hk.pkl``.
- CaptainHook (PHP): ``vendor/bin/captainhook hook:pre-commit`` reads ``captainhook.json`` (``"action"``: a shell
  command).
- rusty-hook (Rust): ``rusty-hook run --hook pre-commit`` reads ``.rusty-hook.toml``.
- GrumPHP: ``vendor/bin/grumphp git:pre-commit`` reads ``grumphp.yml``.
- ``composer lint`` / ``composer run-script lint``: ``composer.json``'s ``scripts`` (npm's are judged, composer's not).
- ``deno task lint``: ``deno.json``'s ``tasks``.
- ``cargo make lint``: ``Makefile.toml``.
- ``poe lint`` / ``pdm run lint`` / ``hatch run lint``: ``pyproject.toml``'s ``[tool.poe.tasks]`` /
  ``[tool.pdm.scripts]`` / hatch env scripts.
None of these tools is installed here: the test asserts the judgement (the person declines every question, so a
change that was asked about or refused does not land). The new content adds a task running ``./x.sh``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support.planted import plant, repo

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

CASES: dict[str, tuple[str, str, str, str]] = {
    # hook line (as the manager installs it), config file, before, after
    "hk": ('hk run pre-commit "$@"', "hk.pkl",
           'amends "package://github.com/jdx/hk/releases/download/v1.0.0/hk@1.0.0#/Config.pkl"\nhooks {}\n',
           'amends "package://github.com/jdx/hk/releases/download/v1.0.0/hk@1.0.0#/Config.pkl"\n'
           'hooks { ["pre-commit"] { steps { ["x"] { check = "./x.sh" } } } }\n'),
    "captainhook": ('vendor/bin/captainhook hook:pre-commit "$@"', "captainhook.json",
                    json.dumps({"pre-commit": {"enabled": True, "actions": []}}),
                    json.dumps({"pre-commit": {"enabled": True, "actions": [{"action": "./x.sh"}]}})),
    "rusty-hook": ("rusty-hook run --hook pre-commit", ".rusty-hook.toml",
                   '[hooks]\npre-commit = "cargo fmt --check"\n', '[hooks]\npre-commit = "./x.sh"\n'),
    "grumphp": ('vendor/bin/grumphp git:pre-commit "$@"', "grumphp.yml",
                "grumphp:\n  tasks: {}\n", "grumphp:\n  tasks:\n    shell:\n      scripts: ['./x.sh']\n"),
    "composer": ("composer run-script lint", "composer.json",
                 json.dumps({"scripts": {"lint": "phpcs"}}), json.dumps({"scripts": {"lint": "./x.sh"}})),
    "deno-task": ("deno task lint", "deno.json",
                  json.dumps({"tasks": {"lint": "deno lint"}}), json.dumps({"tasks": {"lint": "./x.sh"}})),
    "cargo-make": ("cargo make lint", "Makefile.toml",
                   '[tasks.lint]\ncommand = "cargo"\nargs = ["clippy"]\n', '[tasks.lint]\ncommand = "./x.sh"\n'),
    "poe": ("poe lint", "pyproject.toml",
            '[project]\nname = "p"\nversion = "0"\n[tool.poe.tasks]\nlint = "ruff check"\n',
            '[project]\nname = "p"\nversion = "0"\n[tool.poe.tasks]\nlint = "./x.sh"\n'),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
async def test_attack_hook_managers_config_unprotected(workspace: Path, case: str) -> None:
    hook, config, before, after = CASES[case]
    repo(workspace, hook, {config: before})
    person, out = await plant(workspace, {config: after})
    on_disk = (workspace / config).read_text()
    assert on_disk != after, (
        f"{config}, which the hook {hook!r} runs by, was rewritten to run ./x.sh at the next commit with no "
        f"question: questions={person.questions} transaction={out.get('transaction')}"
    )
