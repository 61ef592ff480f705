"""Red team 6 (false alarm on everyday work): ``npm init -y`` in a new project writes a package.json whose
``scripts.test`` is npm's placeholder (``echo "Error: no test specified" && exit 1``). ``hook_configs`` judges
``scripts.test`` always ("the npm pre-commit package's default"), and a new file has no old value: the everyday
first step of every Node project asks the person — in a project with no git hook at all (here: not even a git
repository). Declined, nothing lands. A question should come only where a hook (or the pre-commit package) could run
it, or not for npm's own placeholder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.boxed import Person, run, shell

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None or shutil.which("npm") is None, reason="bwrap or npm missing"),
]


async def test_false_alarm_npm_init_asks(workspace: Path) -> None:
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, "npm init -y")
    assert out["exitCode"] == 0, out
    assert not person.questions, f"`npm init -y` was asked about: {person.questions}"
    assert (workspace / "package.json").exists()
