"""Red team 118 F2: a job's stdin is judged together with an unfinished line the job never received.

docs/shell_exec.md: a background job that runs its stdin as code "has each later write to its stdin judged before
it reaches the process, together with the incomplete line the previous write left (a command split over two writes
is judged whole)". ``tools/shell_jobs.py`` sets ``job.input_carry`` from the whole write *before* writing it; a
write the job takes only part of in 10 s (it is not reading: ``STDIN_BLOCKED``) leaves the judge believing the job
holds the write's last line while the job holds the first 64 KiB. The next write is judged after that phantom line
and run after the real one.

Here: ``bash`` as a job, busy in ``sleep 14``; write 1 is one long ``echo AAAA…`` line (more than a pipe holds),
a newline and ``echo \\`` (judged: harmless). The job takes 64 KiB of the ``echo AAAA…`` line and nothing else.
Write 2 is a newline and a denied line (kept in ``job_input.json``): the judge reads ``echo \\`` + newline +
the line, one ``echo`` of words, and lets it through; bash reads ``echo AAAA…`` + newline + the line and runs the
denied program. (In the box the program itself cannot do much; the point is the judge's claim: a denied line
reached the job's shell and ran, with a person declining every question.)

Control: the same denied line written to the same job on its own is refused (deny), and nothing runs.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from support import error_of, text_of
from support.boxed import Person, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "job_input.json").read_text(encoding="utf-8"))


async def _call(client: Any, **arguments: Any) -> dict[str, Any]:
    with anyio.fail_after(90):
        result = await client.call_tool("shell_exec", {"command": "", **arguments})
    if result.is_error:
        return error_of(result) | {"refused": True}
    return dict(result.structured_content or {}) | {"text": text_of(result)}


async def _output_until_end(client: Any, job: str) -> str:
    seen = ""
    for _ in range(30):
        look = await _call(client, jobId=job, yieldAfterSeconds=2)
        seen += str(look.get("stdout", "")) + str(look.get("stderr", ""))
        if "DENIED-LINE-RAN" in seen or look.get("status") != "running":
            break
    return seen


async def test_control_the_denied_line_written_on_its_own_is_refused(workspace: Path) -> None:
    person = Person(False)
    async with shell(workspace, person) as client:
        started = await _call(client, command="bash", stdin=DATA["start"], yieldAfterSeconds=1, timeoutSeconds=120)
        assert started.get("status") == "running", started
        refused = await _call(client, jobId=started["jobId"], stdin=DATA["denied_alone"])
        await _call(client, jobId=started["jobId"], closeStdin=True)
        seen = await _output_until_end(client, started["jobId"])
    assert refused.get("refused") and "power-off" in refused.get("message", ""), refused
    assert "DENIED-LINE-RAN" not in seen


async def test_a_denied_line_runs_after_a_write_the_job_took_only_part_of(workspace: Path) -> None:
    person = Person(False)
    first = DATA["pad_line_prefix"] + "A" * int(DATA["pad_count"]) + DATA["first_tail"]
    async with shell(workspace, person) as client:
        started = await _call(client, command="bash", stdin=DATA["start"], yieldAfterSeconds=1, timeoutSeconds=120)
        assert started.get("status") == "running", started
        blocked = await _call(client, jobId=started["jobId"], stdin=first)  # the job sleeps: takes 64 KiB in 10 s
        assert blocked.get("code") == "STDIN_BLOCKED", blocked
        second = await _call(client, jobId=started["jobId"], stdin=DATA["second"])
        await _call(client, jobId=started["jobId"], closeStdin=True)
        seen = await _output_until_end(client, started["jobId"])
    assert not person.questions, person.questions
    assert second.get("refused") or "DENIED-LINE-RAN" not in seen, (
        f"the write was judged as an echo and accepted ({second.get('code') or 'no error'}); the job's bash ran the "
        f"denied line: {seen[-300:]!r}"
    )
