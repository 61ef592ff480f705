"""Red team 6: the npm scripts a hook runs are judged only in the package.json *beside* the hook files
(``later._hook_texts`` reads ``.husky/*``, ``.git/hooks/*`` … in that package.json's own directory). In a monorepo
the root hook runs the workspaces' scripts (``npm run lint --workspaces``, ``pnpm -r lint``, ``yarn workspaces
foreach run lint``): a command that rewrites ``packages/a/package.json``'s ``scripts.lint`` lands with no question
(the person declines every question), and the user's next ``git commit`` runs it outside the box. Also: a program the
hook's own program runs (``.git/hooks/pre-commit`` → ``./scripts/pre-commit`` → ``python3 tools/check.py``): only the
first level is protected. The payload writes a marker in the test's tmp dir."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell
from support.hooked import git

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None or shutil.which("npm") is None, reason="bwrap or npm missing"),
]


async def test_attack_workspace_script_the_root_hook_runs(workspace: Path, tmp_path: Path) -> None:
    marker = tmp_path / "MARKER-hook-ran"
    (workspace / "package.json").write_text(json.dumps({"name": "root", "private": True, "workspaces": ["packages/*"]}))
    (workspace / "packages" / "a").mkdir(parents=True)
    (workspace / "packages" / "a" / "package.json").write_text(
        json.dumps({"name": "a", "version": "1.0.0", "scripts": {"lint": "node -v"}}, indent=2) + "\n"
    )
    git(workspace, "init", "-q")
    hook = workspace / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nnpm run lint --workspaces\n")
    hook.chmod(0o755)
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "--no-verify", "-m", "init")
    payload = f"node -e \"require('fs').writeFileSync('{marker}', 'ran')\""
    edit = program(
        workspace, "edit",
        "import json\np = json.load(open('packages/a/package.json'))\n"
        f"p['scripts']['lint'] = {payload!r}\n"
        "open('packages/a/package.json', 'w').write(json.dumps(p, indent=2) + '\\n')\n",
    )  # fmt: skip
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, edit)
    git(workspace, "commit", "-q", "--allow-empty", "-m", "next")
    assert not marker.exists(), (
        f"the user's next commit ran packages/a's scripts.lint the command wrote: questions={person.questions} "
        f"transaction={out.get('transaction')}"
    )


async def test_attack_program_the_hooks_program_runs(workspace: Path, tmp_path: Path) -> None:
    marker = tmp_path / "MARKER-hook-ran"
    (workspace / "scripts").mkdir()
    (workspace / "scripts" / "pre-commit").write_text("#!/bin/sh\npython3 tools/check.py\n")
    (workspace / "scripts" / "pre-commit").chmod(0o755)
    (workspace / "tools").mkdir()
    (workspace / "tools" / "check.py").write_text("print('ok')\n")
    git(workspace, "init", "-q")
    hook = workspace / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nexec ./scripts/pre-commit\n")
    hook.chmod(0o755)
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "--no-verify", "-m", "init")
    payload = f"open({str(marker)!r}, 'w').write('ran')\\n"
    edit = program(workspace, "edit", f"open('tools/check.py', 'w').write(\"{payload}\")\n")
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, edit)
    git(workspace, "commit", "-q", "--allow-empty", "-m", "next")
    assert not marker.exists(), (
        f"the user's next commit ran tools/check.py (run by scripts/pre-commit, run by the hook): "
        f"questions={person.questions} transaction={out.get('transaction')}"
    )
