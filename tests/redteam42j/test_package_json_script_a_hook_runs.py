"""Red team 5b: a package.json script that the project's git hook runs is changed with no question.

The default husky setup (``npx husky init``) writes a pre-commit hook whose whole body is ``npm test``; the npm
``pre-commit`` package runs the scripts its ``"pre-commit"`` key names (``["lint"]``). The hook and the hook key are
guarded, but the script they run is not: a command that rewrites ``scripts.test`` (or ``scripts.lint``) lands with no
question, and the user's next ``git commit`` — outside any box — runs what it wrote. Here the payload is harmless
data (it writes a marker file in the test's tmp dir); the person declines every question.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from support.boxed import Person, run, shell
from support.hooked import git, hooked, sets_script, writes

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None or shutil.which("npm") is None, reason="bwrap or npm missing"),
]

CASES = {
    # hook body, the package.json before, the script the command rewrites
    "husky-init-npm-test": ("npm test", {"name": "app", "version": "1.0.0", "scripts": {"test": "node -v"}}, "test"),
    "pre-commit-package-key": (
        "npm run lint",  # what the pre-commit package's hook does for "pre-commit": ["lint"]
        {"name": "app", "version": "1.0.0", "pre-commit": ["lint"], "scripts": {"lint": "node -v"}},
        "lint",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
async def test_attack_package_json_script_run_by_the_git_hook(workspace: Path, tmp_path: Path, case: str) -> None:
    hook, package, script = CASES[case]
    marker = tmp_path / "MARKER-hook-ran"
    hooked(workspace, hook, package)
    edit = sets_script(workspace, script, writes(marker))
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, edit)
    landed = json.loads((workspace / "package.json").read_text())["scripts"][script]
    # What the user's next commit does, outside any box (the hook is the project's own, unchanged).
    git(workspace, "commit", "-q", "--allow-empty", "-m", "next")
    assert not marker.exists(), (
        f"the hook ran the script the command wrote; questions={person.questions} "
        f"transaction={out.get('transaction')} landed={landed!r}"
    )


async def test_attack_file_write_rewrites_the_script_the_hook_runs(workspace: Path, tmp_path: Path) -> None:
    """file_write (which refuses a lint-staged change as PROTECTED_CONTENT) writes ``scripts.test`` that the
    husky-init hook (``npm test``) runs at the next commit."""
    from support import serve

    marker = tmp_path / "MARKER-hook-ran"
    package: dict[str, Any] = {"name": "app", "version": "1.0.0", "scripts": {"test": "node -v"}}
    (workspace / "package.json").write_text(json.dumps(package, indent=2) + "\n")
    git(workspace, "init", "-q")
    hook_file = workspace / ".git" / "hooks" / "pre-commit"
    hook_file.write_text("#!/bin/sh\nnpm test\n")
    hook_file.chmod(0o755)
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "init")
    package["scripts"]["test"] = f"node -e \"require('fs').writeFileSync('{marker}', 'ran')\""
    async with serve("mcp-server-file-write", workspace, "--history-dir", str(tmp_path / "history")) as client:
        result = await client.call_tool(
            "file_write", {"path": "package.json", "content": json.dumps(package, indent=2), "overwrite": True}
        )
    git(workspace, "commit", "-q", "--allow-empty", "-m", "next")
    assert not marker.exists(), f"the hook ran what file_write wrote: is_error={result.is_error}"


@pytest.mark.parametrize(
    "key",
    [
        ("scripts", "test"),  # what husky init's pre-commit hook runs (npm test)
        ("scripts", "lint"),  # what "pre-commit": ["lint"] runs
        ("config", "commitizen"),  # the adapter module `cz --hook` (a prepare-commit-msg hook) loads
    ],
)
def test_keys_what_a_hook_runs_reads_count_as_hook_keys(key: tuple[str, str]) -> None:
    from mcp_server_guard.hook_configs import changed_hook_keys

    section, name = key
    old = {"name": "app", "pre-commit": ["lint"], section: {name: "node -v" if section == "scripts" else {}}}
    new = {**old, section: {name: "node evil.js" if section == "scripts" else {"path": "./evil.js"}}}
    hooks = ["npm test\n"]  # .husky/pre-commit as `npx husky init` writes it
    assert changed_hook_keys(json.dumps(old).encode(), json.dumps(new).encode(), hooks), f"{section}.{name}: unseen"


def test_a_script_a_husky_hook_file_runs_is_judged_and_other_scripts_are_not(tmp_path: Path) -> None:
    from mcp_server_guard.hook_configs import changed_hook_keys, hook_texts

    (tmp_path / ".husky").mkdir()
    (tmp_path / ".husky" / "pre-commit").write_text("yarn run --silent lint:staged\nnpm run typecheck -- --pretty\n")
    (tmp_path / ".husky" / "fifo").unlink(missing_ok=True)
    os.mkfifo(tmp_path / ".husky" / "fifo")  # never opened: a FIFO would hang the reader
    directory = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        texts = hook_texts(directory)
    finally:
        os.close(directory)
    old = {"scripts": {"lint:staged": "eslint .", "typecheck": "tsc", "build": "tsc -b"}}
    for name in ("lint:staged", "typecheck"):
        new = {"scripts": {**old["scripts"], name: "node evil.js"}}
        assert changed_hook_keys(json.dumps(old).encode(), json.dumps(new).encode(), texts) == [f"scripts.{name}"]
    # A script no hook runs is the project's own business: editing it is not asked about.
    edited = {"scripts": {**old["scripts"], "build": "tsc -b --verbose", "dev": "vite"}}
    assert changed_hook_keys(json.dumps(old).encode(), json.dumps(edited).encode(), texts) == []
