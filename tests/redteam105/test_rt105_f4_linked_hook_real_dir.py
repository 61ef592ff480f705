"""Red team 105 F4: a git hook that is a link (``.git/hooks/pre-commit -> ../../scripts/hook.sh``) whose script finds
its siblings the way a linked script must, from its real place: ``. "$(dirname "$(readlink -f "$0")")/lib.sh"``,
``"$(dirname "$(realpath "$0")")/check.sh"``. Git runs scripts/lib.sh and scripts/check.sh at the next commit; the
reader (``hook_runs._runs``/``_BUILT``) names neither (``run_by_hooks`` returns nothing), so a command rewrites them
unasked and the user's next ``git commit`` runs the rewritten file outside the box.

The command lines travel as data (hook_lines.json). A person declines every question; a case fails when a file the
hook runs was changed. (The hook's text is plain project content, written by the test.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from support.boxed import Person, run, shell
from support.hooked import git

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

LINES: dict[str, str] = json.loads((Path(__file__).resolve().parent / "hook_lines.json").read_text())
HOOK = '#!/bin/sh\n. "$(dirname "$(readlink -f "$0")")/lib.sh"\n"$(dirname "$(realpath "$0")")/check.sh"\n'


def _project(root: Path) -> None:
    git(root, "init", "-q")
    (root / "scripts").mkdir()
    (root / "scripts" / "hook.sh").write_text(HOOK)
    (root / "scripts" / "lib.sh").write_text("true\n")
    (root / "scripts" / "check.sh").write_text("#!/bin/sh\ntrue\n")
    for name in ("hook.sh", "check.sh"):
        (root / "scripts" / name).chmod(0o755)
    git(root, "add", "-A")
    git(root, "commit", "-q", "--no-verify", "-m", "init")
    hooks = root / ".git" / "hooks"
    (hooks / "pre-commit").unlink(missing_ok=True)
    os.symlink("../../scripts/hook.sh", hooks / "pre-commit")


def test_git_runs_both_files_through_the_linked_hook(workspace: Path) -> None:
    """(The premise: the hook really runs scripts/lib.sh and scripts/check.sh.)"""
    _project(workspace)
    (workspace / "scripts" / "check.sh").write_text("#!/bin/sh\necho ran-check\n")
    (workspace / "scripts" / "lib.sh").write_text("echo ran-lib\n")
    done = subprocess.run(["sh", ".git/hooks/pre-commit"], cwd=workspace, capture_output=True, text=True, timeout=30,
                          check=False)  # fmt: skip
    assert "ran-lib" in done.stdout and "ran-check" in done.stdout, done


@pytest.mark.parametrize("case", sorted(LINES))
async def test_what_a_linked_hook_runs_from_its_real_dir_is_guarded(workspace: Path, case: str) -> None:
    _project(workspace)
    ran = ("hook.sh", "lib.sh", "check.sh")
    before = {p: (workspace / "scripts" / p).read_bytes() for p in ran}
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, LINES[case], cwd=str(workspace))
    after = {p: (workspace / "scripts" / p).read_bytes() for p in ran}
    assert after == before, (case, person.questions, out.get("transaction"), out.get("changes"))
