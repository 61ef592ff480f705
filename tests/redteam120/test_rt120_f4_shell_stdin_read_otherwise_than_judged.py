"""Red team 120 F4 (LOW): text a shell reads from stdin is judged as a shell would read it only where every line
starts a fresh command; a quote left open by one job write, or a character eaten by ``read -n 1``, makes bash read
the next text otherwise than the judge does, and a denied line runs without a question.

docs/shell_exec.md: a background job that runs its stdin as code has "each later write to its stdin judged before
it reaches the process, together with the incomplete line the previous write left (a command split over two writes
is judged whole)". ``shell.jobs.unfinished_line`` keeps only the text after the last newline (and lines continued by
a backslash); a newline inside an open quote is no end of a command to bash.

1. Job: ``bash``. Write 1 ``echo "start`` + newline (judged: an ``echo``; allowed). Write 2 is ``"; <denied line>;
   #"`` + newline: judged alone, it is one quoted word (a command named ``; shutdown …``) and allowed; bash reads
   ``echo "start<LF>"; shutdown -h now || echo DENIED-LINE-RAN; #"`` and runs the denied program.
2. One call: ``bash`` fed ``read -r -n 1 _`` then ``Xshutdown -h now || …``: the judge reads a program named
   ``Xshutdown``; bash reads its script from the pipe a byte at a time, ``read`` takes the ``X``, and bash runs
   ``shutdown``.

In the box ``shutdown`` itself fails; the point is the judge's claim (red team 118 F2's class): any deny or ask rule
on a shell's stdin (an asked ``git push --force`` to an allowed host) is stepped around, and the audit names the
harmless text. docs/security.md already names "a job's input split around a here-document" as a way around the
string policy under full-access; this is the same class by other spellings, and in the default box mode.

Controls that pass: the denied line written to the same job on its own is refused, and fed on its own as a call's
stdin it is refused. Texts travel as data (job_input_quotes.json).
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

DATA: dict[str, str] = json.loads((Path(__file__).parent / "job_input_quotes.json").read_text(encoding="utf-8"))


async def _call(client: Any, **arguments: Any) -> dict[str, Any]:
    with anyio.fail_after(90):
        result = await client.call_tool("shell_exec", {"command": "", **arguments})
    if result.is_error:
        return error_of(result) | {"refused": True}
    return dict(result.structured_content or {}) | {"text": text_of(result)}


async def _output_until_end(client: Any, job: str) -> str:
    seen = ""
    for _ in range(20):
        look = await _call(client, jobId=job, yieldAfterSeconds=2)
        seen += str(look.get("stdout", "")) + str(look.get("stderr", ""))
        if "DENIED-LINE-RAN" in seen or look.get("status") != "running":
            break
    return seen


async def test_control_the_denied_line_written_to_the_job_on_its_own_is_refused(workspace: Path) -> None:
    person = Person(False)
    async with shell(workspace, person) as client:
        started = await _call(client, command="bash", stdin=DATA["start"], yieldAfterSeconds=1, timeoutSeconds=60)
        assert started.get("status") == "running", started
        refused = await _call(client, jobId=started["jobId"], stdin=DATA["denied_alone"])
        await _call(client, jobId=started["jobId"], closeStdin=True)
        seen = await _output_until_end(client, started["jobId"])
    assert refused.get("refused"), refused
    assert "DENIED-LINE-RAN" not in seen


async def test_a_denied_line_inside_a_quote_the_previous_write_opened_runs(workspace: Path) -> None:
    person = Person(False)
    async with shell(workspace, person) as client:
        started = await _call(client, command="bash", stdin=DATA["start"], yieldAfterSeconds=1, timeoutSeconds=60)
        assert started.get("status") == "running", started
        first = await _call(client, jobId=started["jobId"], stdin=DATA["open_quote"])
        second = await _call(client, jobId=started["jobId"], stdin=DATA["inside_quote"])
        await _call(client, jobId=started["jobId"], closeStdin=True)
        seen = await _output_until_end(client, started["jobId"])
    assert not first.get("refused"), first
    assert second.get("refused") or person.questions or "DENIED-LINE-RAN" not in seen, (
        f"the write was judged as one quoted word and sent; the job's bash ran the denied line: {seen[-300:]!r}"
    )


async def test_control_the_denied_line_as_a_calls_stdin_is_refused(workspace: Path) -> None:
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await _call(client, command="bash", stdin=DATA["denied_alone"], timeoutSeconds=60)
    assert out.get("refused") and "DENIED-LINE-RAN" not in str(out.get("stdout", "")), out


# Known and left (the class docs/security.md names: a program of the job's that reads its stdin takes bytes the judge
# reads as code). Strict: this fails the suite the day it passes.
@pytest.mark.xfail(strict=True, reason="`read -n 1` takes a byte of the job's input the judge reads as code (known)")
async def test_a_denied_line_after_a_character_read_n_takes_runs(workspace: Path) -> None:
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await _call(client, command="bash", stdin=DATA["eaten_char"], timeoutSeconds=60)
    assert out.get("refused") or person.questions or "DENIED-LINE-RAN" not in str(out.get("stdout", "")), (
        f"judged as a program named Xshutdown; bash ran the denied line: {out}"
    )
