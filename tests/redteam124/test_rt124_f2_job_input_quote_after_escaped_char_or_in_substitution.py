"""Red team 124 F2 (LOW): a job write that leaves bash inside a single quote the carry tracker does not see: the next
write is judged alone, as one quoted word, and bash runs the denied line in it.

``shell.jobs.unfinished_line`` (red teams 120 F4, 122 F2) still misreads two spellings:

* ``#`` after an escaped character (``echo a\\ #'``, ``echo a\\;#'``): it takes the ``#`` as a comment because the
  character before it is a blank or ``;`` — but that character was escaped, the ``#`` is inside the word, and bash
  opens the quote after it;
* a quote inside a command substitution inside double quotes (``echo "$(echo ')"``): inside ``"…"`` it ignores
  ``$(``, so the ``'`` is none for it; bash parses the substitution, and the ``'`` opens a quote there.

In both the tracker stands at a fresh line (carry ""), bash inside a quote. The next write,
``'; <denied line>; #'`` (or ``')"; <denied line>; #'``), judged alone, is one quoted word (a program named so);
bash closes its quote with the first ``'`` and runs the denied line.

In the box the denied program fails; the point is the judge's claim (any deny or ask rule on a job's stdin is
stepped around, and the audit names harmless text) — the class of red teams 120 F4 / 122 F2, by new spellings.

Controls that pass: ``echo a #'`` (a true comment) then the same write, and the denied line alone, are refused.
Texts travel as data (job_input_carry.json).
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

DATA: dict[str, str] = json.loads((Path(__file__).parent / "job_input_carry.json").read_text(encoding="utf-8"))


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
        seen += str(look.get("stdout", ""))  # (stdout only: bash's stderr may quote the line it could not run)
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
        first = await _call(client, jobId=started["jobId"], stdin=DATA[first_text])
        second = await _call(client, jobId=started["jobId"], stdin=DATA[second_text])
        closed = await _call(client, jobId=started["jobId"], closeStdin=True)
        seen = "".join(str(r.get("stdout", "")) for r in (first, second, closed))
        seen += await _output_until_end(client, started["jobId"])
    return first, second, seen, person


async def test_control_the_denied_line_alone_is_refused(workspace: Path) -> None:
    _first, second, seen, _person = await _two_writes(workspace, "start", "denied_alone")
    assert second.get("refused") and not _ran(seen), (second, seen[-300:])


async def test_control_after_a_true_comment_nothing_runs(workspace: Path) -> None:
    first, _second, seen, _person = await _two_writes(workspace, "control_open_quote", "inside_single_quote")
    assert not first.get("refused"), first
    assert not _ran(seen), seen[-300:]


@pytest.mark.parametrize(
    ("first_text", "second_text"),
    [
        ("escaped_blank_before_hash", "inside_single_quote"),
        ("escaped_semicolon_before_hash", "inside_single_quote"),
        ("quote_in_substitution_in_double_quotes", "inside_substitution_quote"),
    ],
)
async def test_a_denied_line_inside_a_quote_the_tracker_missed_runs(
    workspace: Path, first_text: str, second_text: str
) -> None:
    first, second, seen, person = await _two_writes(workspace, first_text, second_text)
    assert not first.get("refused"), first
    assert second.get("refused") or person.questions or not _ran(seen), (
        f"the write was judged alone as one quoted word and sent; the job's bash ran the denied line: {seen[-300:]!r}"
    )
