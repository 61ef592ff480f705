"""Red team 122 F2 (LOW): a job write holding a complete here-document whose body has an unbalanced quote (``it's``,
``say "hi``) leaves ``shell.jobs.unfinished_line`` inside a quote that bash never opened: every later write is
judged after that text, as the inside of a quoted word, and a denied line runs without a question.

docs/shell_exec.md: a job's later write is judged "together with what the previous writes left unfinished — the
text since the last line start outside every quote and continued line". ``unfinished_line`` tracks quotes but not
here-documents: in ``cat <<EOF`` / ``it's done`` / ``EOF`` the body's apostrophe opens a quote for it, and the line
starts after it do not count. bash reads the body as data, ends it at ``EOF`` and stands at a fresh line. The next
write, the denied line on its own, is judged as ``it's done<LF>EOF<LF><denied line>`` — a command ``it`` whose
argument is one unterminated quoted word — allowed and sent; bash runs it. (The judge itself reads the here-document
right: the first write is ``cat`` with its body. Only the carry is wrong; it then stays wrong for the rest of the
job, every write judged as part of the same quoted word.)

Same class as red team 120 F4 (a denied line inside a quote the tracker misreads), by the spelling its answer missed:
the brief names here-documents among the carry's cases. In the box ``shutdown`` fails; the point is the judge's
claim (any deny or ask rule on a shell's stdin is stepped around, and the audit names harmless text).

Controls that pass: the same here-document with no quote in its body, then the denied line, is refused; the denied
line alone is refused. Texts travel as data (job_input_heredoc.json).
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

DATA: dict[str, str] = json.loads((Path(__file__).parent / "job_input_heredoc.json").read_text(encoding="utf-8"))


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


async def _heredoc_then_denied(workspace: Path, heredoc: str) -> tuple[dict[str, Any], dict[str, Any], str, Person]:
    person = Person(False)
    async with shell(workspace, person) as client:
        started = await _call(client, command="bash", stdin=DATA["start"], yieldAfterSeconds=1, timeoutSeconds=60)
        assert started.get("status") == "running", started
        first = await _call(client, jobId=started["jobId"], stdin=DATA[heredoc])
        second = await _call(client, jobId=started["jobId"], stdin=DATA["denied_alone"])
        await _call(client, jobId=started["jobId"], closeStdin=True)
        seen = await _output_until_end(client, started["jobId"])
    return first, second, seen, person


async def test_control_the_denied_line_after_a_heredoc_without_quotes_is_refused(workspace: Path) -> None:
    first, second, seen, _person = await _heredoc_then_denied(workspace, "heredoc_closed_quotes")
    assert not first.get("refused"), first
    assert second.get("refused") and "DENIED-LINE-RAN" not in seen, (second, seen[-300:])


@pytest.mark.parametrize("heredoc", ["heredoc_apostrophe", "heredoc_double_quote", "heredoc_tab_stripped"])
async def test_a_denied_line_after_a_heredoc_whose_body_holds_a_quote_runs(workspace: Path, heredoc: str) -> None:
    first, second, seen, person = await _heredoc_then_denied(workspace, heredoc)
    assert not first.get("refused"), first
    assert second.get("refused") or person.questions or "DENIED-LINE-RAN" not in seen, (
        f"the write was judged inside a quote the here-document's body opened for the tracker only; the job's bash "
        f"ran the denied line: {seen[-300:]!r}"
    )
