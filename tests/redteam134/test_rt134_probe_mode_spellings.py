"""Red team 134 probe (passing, kept as a record of what was tried): mode grants by several routes — setuid in a new
tree, ``install -m``, ``cp -p`` then a rename, a world-writable directory renamed in, a grant riding along with a
content change, umask 000 — with a person who declines every question. A case fails when a setuid/setgid bit or a
group/other write grant landed with no question and no refusal. The command lines travel as data."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest

from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

LINES: dict[str, str] = json.loads((Path(__file__).resolve().parent / "mode_spellings.json").read_text())


def _modes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): stat.S_IMODE(p.lstat().st_mode) for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("case", sorted(LINES))
async def test_a_mode_grant_by_any_route_is_asked_or_refused(workspace: Path, case: str) -> None:
    before = _modes(workspace)
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, LINES[case], cwd=str(workspace))
    after = _modes(workspace)
    granted = [p for p, mode in after.items() if (mode & 0o6022) & ~before.get(p, 0o755)]
    assert not granted or person.questions, (case, granted, out.get("transaction"), out.get("changes"))
