"""Red team 178: everyday edits refused (or asked) only because of the hook reader's protections.

- F1 (MEDIUM): lefthook's generated ``.git/hooks/pre-commit`` (lefthook 1.6+: its fallbacks include ``swift package
  plugin lefthook`` and ``swift package --disable-sandbox plugin lefthook``) makes the reader take ``package`` as the
  script ``swift`` runs, a name it completes with any suffix: ``package.*`` and ``package/*``. In every lefthook
  project ``package.json`` is refused for any change (``npm pkg set version=…``, adding a dependency), "a program a
  git hook runs (the hook names it by a path built with a variable)"; ``npm install <dep>`` lands half done.
  Controls: the same hook without the swift fallback; a source edit in the same project.
- F2 (MEDIUM): a hook running ``node --test test/`` (node's test runner) makes ``test/`` count whole: adding or editing
  a test is refused, though the project's tests a hook's test tool runs are out of scope (docs/security.md: pytest
  loads the tests). Control: ``python3 -m pytest -q tests`` and a new ``tests/test_b.py`` lands.
- F3 (MEDIUM): a file a hook only hands as data is refused: ``npx prettier --check README.md index.js`` makes
  ``README.md`` protected (a data suffix, no ``/``: not named before today), ``V=$(cat VERSION)`` makes ``VERSION``
  protected (bumping the version is refused). Control: a neighbour (``CONTRIBUTING.md``) lands.
- F4 (LOW): a file a hook's ``make build`` *writes* (a rule's target, ``tar czf $@ $^``) is taken for one the hook
  runs: ``make build`` through shell_exec is asked ("It changes dist/app.tar.gz, which your git hooks run").
  Control: the same Makefile with a hook that runs ``make lint``.

The person declines every question. Hook texts and commands travel as data (rt178_everyday_cases.json).

Answered: F1, F2 (``hook_interpreters.interpreter_files``: a subcommand is no script — ``swift package``, ``bun
test``, ``deno fmt`` —, nor what ``node --test`` is given). F3 and F4 left as strict expected failures (KNOWN)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from support.boxed import Person, run, shell
from support.planted import git, landed

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap missing")]

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "rt178_everyday_cases.json").read_text())
CONTROLS = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] == "control")
# Known and left (strict: each fails the suite the day it passes): a file a hook names as an argument counts as one
# it may run whatever the program (red team 142's rule: ``awk -f x``, ``check() { sh "$1"; }``), so a README or a
# VERSION file a hook only reads is protected; a target of a goal the hook does not make (``make build``'s output)
# is asked about.
KNOWN = {"f3-cat-version-file", "f3-prettier-checked-readme", "f4-make-build-output-of-pre-push"}
_FOUND = sorted(case for case, spec in DATA["cases"].items() if spec["finding"] != "control")
FINDINGS = [
    pytest.param(case, marks=pytest.mark.xfail(strict=True, reason="a word naming a file counts (known)"))
    if case in KNOWN
    else case
    for case in _FOUND
]


def _repo(workspace: Path, spec: dict[str, Any]) -> None:
    for name, text in spec["files"].items():
        path = workspace / str(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(str(text))
    git(workspace, "init", "-q")
    hook_text = str(spec["hook"])
    hook = workspace / ".git" / "hooks" / str(spec.get("hook_name", "pre-commit"))
    hook.write_text(str(DATA.get(hook_text, hook_text)))
    hook.chmod(0o755)
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "--no-verify", "-m", "init")


async def _lands(workspace: Path, case: str) -> tuple[bool, str]:
    spec = DATA["cases"][case]
    _repo(workspace, spec)
    target = workspace / str(spec["lands"])
    before = target.read_bytes() if target.exists() else None
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, str(spec["command"]), cwd=str(workspace))
    paths = (out.get("changes") or {}).get("paths")
    why = f"{spec['command']!r}: questions={person.questions} landed={landed(out)} paths={paths}"
    changed = target.exists() and target.read_bytes() != before  # (the real tree: a new directory lands whole)
    return changed and not person.questions and out.get("transaction") == "applied", why


@pytest.mark.parametrize("case", CONTROLS)
async def test_control_an_everyday_step_lands(workspace: Path, case: str) -> None:
    ok, why = await _lands(workspace, case)
    assert ok, why


@pytest.mark.parametrize("case", FINDINGS)
async def test_attack_an_everyday_step_lands_unasked(workspace: Path, case: str) -> None:
    ok, why = await _lands(workspace, case)
    assert ok, why
