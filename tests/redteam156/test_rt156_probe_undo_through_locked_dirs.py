"""Red team 156 probe: a command that changes files in a directory and then takes the user's own write (or search)
right away from it; the person declines every question; ``mcp-guard undo`` of the call must put the tree back
exactly, or refuse and say so — never say success over a tree that is not back. Lines travel as data."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from support.boxed import Person, run, shell, snap, undo

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

LINES: dict[str, str] = json.loads((Path(__file__).resolve().parent / "rt156_locked_dirs.json").read_text())


def _unlock(root: Path) -> None:
    for dirpath, dirnames, _files in os.walk(root):
        for name in dirnames:
            path = os.path.join(dirpath, name)
            os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode) | 0o700)


@pytest.mark.parametrize("case", sorted(LINES))
async def test_undo_through_a_directory_the_command_locked(workspace: Path, case: str) -> None:
    before = snap(workspace)
    root_mode = stat.S_IMODE(workspace.stat().st_mode)
    person = Person(False)
    try:
        async with shell(workspace, person) as client:
            out = await run(client, LINES[case], cwd=str(workspace))
        audit = str(out.get("auditId") or "")
        assert out.get("transaction") == "applied", (case, out.get("transaction"), out.get("changes"), person.questions)
        undo_id, why = undo(audit)
        root_after = stat.S_IMODE(workspace.stat().st_mode)
        workspace.chmod(0o755)
        _unlock(workspace)
        after = snap(workspace)
        assert undo_id == "" or (after == before and root_after == root_mode), (case, oct(root_mode), oct(root_after))
        differ = {k: (before.get(k), after.get(k)) for k in set(before) | set(after) if before.get(k) != after.get(k)}
        assert undo_id == "" or after == before, (case, why, differ)
    finally:
        workspace.chmod(0o755)
        _unlock(workspace)
