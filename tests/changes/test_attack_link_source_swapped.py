"""A ``link`` step whose source is replaced between the read of the change set and the apply.

``Transactions.settle`` reads a call's change set once; when the judgement asks the person, the SAME change set is
judged again after the answer and applied. While the person reads the question, the project can change — e.g. by
another call of the same model, applied at once. ``steps._link`` checks only that its source is still a regular
file (no ctime/identity check against what was read: ``_meta``, ``_place``, ``_move`` and ``_delete`` all have one),
and the judgement judged the new name's bytes from the upper layer, which still holds the old ones. So a name
judged by its content (a new git dir's config) ends up as a name of whatever the source holds at apply time.

Call Y: makes ``newrepo/.git`` a git dir whose ``config`` is ``ln benign.cfg newrepo/.git/config`` and a new
executable (so that the person is asked). While asked, call X rewrites ``benign.cfg`` with ``core.fsmonitor``
(an ordinary file: applied with no question). The person says yes to "new executables"; Y lands.

The payload is harmless (``echo``) and is never run: the test only reads the config.

FAILS when the attack succeeds."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.types import ElicitRequestParams, ElicitResult

from support.boxed import program, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

PAYLOAD = "[core]\n\tfsmonitor = echo redteam-fsmonitor-would-run-here\n"


class SlowPerson:
    """Says yes to everything, but holds the change-set question until ``release`` is set."""

    def __init__(self) -> None:
        self.asked = anyio.Event()
        self.release = anyio.Event()
        self.questions: list[str] = []

    async def __call__(self, _ctx: Any, params: ElicitRequestParams) -> ElicitResult:
        self.questions.append(params.message)
        props = dict(params.requested_schema.get("properties", {}))  # type: ignore[union-attr]
        if "Apply these changes" in params.message:
            self.asked.set()
            await self.release.wait()
        return ElicitResult(action="accept", content={k: True for k, p in props.items() if p.get("type") == "boolean"})


async def test_a_link_lands_to_the_bytes_that_were_judged(workspace: Path) -> None:
    (workspace / "benign.cfg").write_text("[user]\n\tname = someone\n")
    (workspace / ".t").mkdir()
    (workspace / ".t" / "payload").write_text(PAYLOAD)  # data only
    y = program(
        workspace,
        "y",
        """
os.makedirs("newrepo/.git/objects"); os.makedirs("newrepo/.git/refs/heads")
open("newrepo/.git/HEAD", "w").write("ref: refs/heads/main\\n")
os.link("benign.cfg", "newrepo/.git/config")
open("newtool", "w").write("#!/bin/sh\\n"); os.chmod("newtool", 0o755)
""",
    )
    x = program(
        workspace,
        "x",
        """
with open("benign.cfg", "a") as out:
    out.write(open(".t/payload").read())
""",
    )
    person = SlowPerson()
    results: dict[str, Any] = {}
    async with shell(workspace, person) as client:  # type: ignore[arg-type]

        async def call_y() -> None:
            results["y"] = await run(client, y, timeout=120)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call_y)
            with anyio.fail_after(60):
                await person.asked.wait()
            results["x"] = await run(client, x)
            person.release.set()
    config = workspace / "newrepo" / ".git" / "config"
    text = config.read_text() if config.exists() else ""
    assert "fsmonitor" not in text, (
        f"newrepo/.git/config runs a program:\n{text}\nY: {results['y']['changes']}\nX: {results['x']['changes']}\n"
        f"questions: {person.questions}"
    )
