"""Red team 126 F1: a job write that leaves bash inside a single quote the carry tracker does not see; the next write is
judged alone as one quoted word, and bash runs the denied line in it (class of red teams 120 F4 / 122 F2 / 124 F2,
new spellings).

``shell.jobs.unfinished_line`` takes a ``#`` as a comment where bash does not, or misses a quote bash opens:

* ``#`` inside a command substitution starts a comment for bash; the tracker never reads comments inside ``$(``,
  so a ``'`` and a ``)`` in that comment are code to it (``echo $(true #'`` + ``)')``: bash is in a quote, the
  tracker at a fresh line);
* a ``'`` inside ``"${x:-…}"`` opens a quote for bash; the tracker ignores quotes inside double quotes;
* a ``#`` after ``((`` + blank, after an array assignment's ``)``, inside ``[[ =~ ( … ) ]]`` and inside a
  ``[[ == @( … ) ]]`` pattern is no comment for bash (the tracker: a word start, a comment to the line end).

In each the tracker's carry is "" while bash stands inside a quote; the next write,
``'…; <denied line>; #'`` is judged alone as one quoted word; bash closes its quote and runs the denied line.

Controls that pass: ``echo a #'`` (a true comment) then the same write, and the denied line alone, are refused.
Texts travel as data (job_input_unseen_quotes.json).
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

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "job_input_unseen_quotes.json").read_text(encoding="utf-8"))
CASES: dict[str, list[str]] = DATA["cases"]


async def _call(client: Any, **arguments: Any) -> dict[str, Any]:
    with anyio.fail_after(90):
        result = await client.call_tool("shell_exec", {"command": "", **arguments})
    if result.is_error:
        return error_of(result) | {"refused": True}
    return dict(result.structured_content or {}) | {"text": text_of(result)}


def _ran(stdout: str) -> bool:
    """Whether the denied line's echo ran: its word alone on a line of stdout."""
    return "DENIED-LINE-RAN" in stdout.splitlines()


async def _output_until_end(client: Any, job: str) -> str:
    seen = ""
    for _ in range(20):
        look = await _call(client, jobId=job, yieldAfterSeconds=2)
        seen += str(look.get("stdout", ""))
        if _ran(seen) or look.get("status") != "running":
            break
    return seen


async def _two_writes(
    workspace: Path, first_text: str, second_text: str
) -> tuple[dict[str, Any], dict[str, Any], str, Person]:
    person = Person(False)
    async with shell(workspace, person) as client:
        started = await _call(client, command="bash", stdin=DATA["start"], yieldAfterSeconds=1, timeoutSeconds=60)
        assert started.get("status") == "running", started
        first = await _call(client, jobId=started["jobId"], stdin=first_text)
        second = await _call(client, jobId=started["jobId"], stdin=second_text)
        closed = await _call(client, jobId=started["jobId"], closeStdin=True)
        seen = "".join(str(r.get("stdout", "")) for r in (first, second, closed))
        seen += await _output_until_end(client, started["jobId"])
    return first, second, seen, person


async def test_control_the_denied_line_alone_is_refused(workspace: Path) -> None:
    _first, second, seen, _person = await _two_writes(workspace, DATA["start"], DATA["denied_alone"])
    assert second.get("refused") and not _ran(seen), (second, seen[-300:])


async def test_control_after_a_true_comment_nothing_runs(workspace: Path) -> None:
    first, _second, seen, _person = await _two_writes(workspace, DATA["control_open_quote"], DATA["control_second"])
    assert not first.get("refused"), first
    assert not _ran(seen), seen[-300:]


@pytest.mark.parametrize("case", sorted(CASES))
async def test_a_denied_line_inside_a_quote_the_tracker_missed_runs(workspace: Path, case: str) -> None:
    first_text, second_text = CASES[case]
    first, second, seen, person = await _two_writes(workspace, first_text, second_text)
    if first.get("refused") or person.questions:
        return  # (the opening write itself was refused or asked: nothing to show)
    assert second.get("refused") or person.questions or not _ran(seen), (
        f"the write was judged alone as one quoted word and sent; the job's bash ran the denied line: {seen[-300:]!r}"
    )
