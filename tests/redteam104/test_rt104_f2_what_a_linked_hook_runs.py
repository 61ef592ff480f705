"""Red team 104 F2 (HIGH): a git hook that is a symlink into the project (``ln -s ../../scripts/hook.sh
.git/hooks/pre-commit``, a common set-up) is read by nobody: the file it leads to is protected, but what that file
runs (a script it sources, a program it names by path) is not — while for the same hook as a regular file both are
refused ("a program a git hook runs"). The user's next ``git commit`` runs the rewritten file, outside the box.

The command lines travel as data (hook_lines.json). A person declines every question; a case fails when a file the
hook runs was changed."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from support.boxed import Person, run, shell
from support.clients import serve
from support.hooked import git

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

LINES: dict[str, str] = json.loads((Path(__file__).resolve().parent / "hook_lines.json").read_text())


def _project(root: Path, linked: bool) -> None:
    git(root, "init", "-q")
    (root / "scripts").mkdir()
    (root / "scripts" / "hook.sh").write_text("#!/bin/sh\n. scripts/lib.sh\npython3 scripts/check.py\n")
    (root / "scripts" / "hook.sh").chmod(0o755)
    (root / "scripts" / "lib.sh").write_text("true\n")
    (root / "scripts" / "check.py").write_text("pass\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "--no-verify", "-m", "init")
    hooks = root / ".git" / "hooks"
    (hooks / "pre-commit").unlink(missing_ok=True)
    if linked:
        os.symlink("../../scripts/hook.sh", hooks / "pre-commit")
    else:
        shutil.copy2(root / "scripts" / "hook.sh", hooks / "pre-commit")


@pytest.mark.parametrize("linked", [True, False])
@pytest.mark.parametrize("case", sorted(LINES))
async def test_what_a_hook_runs_is_guarded_linked_or_not(workspace: Path, case: str, linked: bool) -> None:
    _project(workspace, linked)
    ran = ("hook.sh", "lib.sh", "check.py") if linked else ("lib.sh", "check.py")  # (a copied hook runs not hook.sh)
    before = {p: (workspace / "scripts" / p).read_bytes() for p in ran}
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, LINES[case], cwd=str(workspace))
    after = {p: (workspace / "scripts" / p).read_bytes() for p in ran}
    assert after == before, (case, person.questions, out.get("transaction"), out.get("changes"))


@pytest.mark.parametrize("linked", [True, False])
@pytest.mark.parametrize("name", ["lib.sh", "check.py"])
async def test_file_write_refuses_what_a_hook_runs_linked_or_not(workspace: Path, name: str, linked: bool) -> None:
    _project(workspace, linked)
    before = (workspace / "scripts" / name).read_bytes()
    async with serve("mcp-server-file-write", workspace) as client:
        result = await client.call_tool(
            "file_write", {"path": f"scripts/{name}", "content": "# rewritten by the model\n", "overwrite": True}
        )
    assert (workspace / "scripts" / name).read_bytes() == before, (name, linked, result.structured_content)
