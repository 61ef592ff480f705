"""The ``move`` step renames a real file the command renamed (one with other names) — even where the judgement
REFUSED the deletion of its old name: ``steps_for`` leaves a move out only when its destination is refused, never
when its source (``moved_from``) is. A protected file with a second name (made by an earlier call, see
test_protected_links) is thereby renamed away from its protected path, while the call reports the path refused.

Each test FAILS when the attack succeeds."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


async def test_a_refused_deletion_of_a_protected_file_is_not_carried_out_as_a_move(workspace: Path) -> None:
    envrc = workspace / ".envrc"
    envrc.write_text("export PROJECT_SECRET_CHECKS=on\n")
    os.link(envrc, workspace / "second-name")  # a second name (a call of the command can make one: see above)
    code = program(
        workspace,
        "mv",
        """
os.rename(".envrc", "stolen.txt")
""",
    )
    person = Person()
    async with shell(workspace, person) as client:
        out = await run(client, code)
    assert envrc.exists(), (
        f".envrc is gone (now at stolen.txt: {(workspace / 'stolen.txt').exists()}); the call reported refused: "
        f"{out['changes']['refused']} / paths {out['changes']['paths']}"
    )


async def test_two_calls_move_a_protected_file_away(workspace: Path) -> None:
    envrc = workspace / ".envrc"
    envrc.write_text("export PROJECT_SECRET_CHECKS=on\n")
    first = program(
        workspace,
        "ln",
        """
os.link(".envrc", "second-name")
""",
    )
    second = program(
        workspace,
        "mv",
        """
os.rename(".envrc", "stolen.txt")
""",
    )
    async with shell(workspace) as client:
        await run(client, first)
        out = await run(client, second)
    assert envrc.exists(), f".envrc is gone; the call said: {out['changes']}"
