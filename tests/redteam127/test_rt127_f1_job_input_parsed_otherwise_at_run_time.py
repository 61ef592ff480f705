"""Red team 127 F1: the `bash -n` check of a job's input (red team 126) parses with a fresh bash's defaults; the
job's shell reads its input otherwise at run time, so a quote it opens is seen by neither the scanner nor bash -n.

* a job of ``sh`` (dash here) or ``dash``: ``$'\\''`` is one ANSI-C quote for bash (scanner and bash -n: closed),
  for dash a ``$``, a quoted backslash, and an opened plain quote;
* ``shopt -s extglob`` run by an earlier write: ``echo @(#'`` is a syntax error for bash -n (no extglob: not "end of
  file", taken as complete) and a comment for the scanner; the job's bash reads an extglob pattern and opens a quote;
* ``shopt -s expand_aliases`` and an alias whose value opens a quote: bash -n knows no alias.

In each the next write ``'…; <denied line>; #'`` is judged alone as one quoted word and sent; the job's shell closes
its quote and runs the denied line. Texts travel as data (job_input_runtime_parse.json).

Controls: the denied line alone is refused; in bash (not dash) ``$'\\''`` is closed and nothing runs; without
extglob ``echo @(#'`` ends bash (syntax error) and nothing runs.
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

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "job_input_runtime_parse.json").read_text(encoding="utf-8"))
CASES: dict[str, dict[str, Any]] = DATA["cases"]
CONTROLS: dict[str, dict[str, Any]] = DATA["controls"]


async def _call(client: Any, **arguments: Any) -> dict[str, Any]:
    with anyio.fail_after(90):
        result = await client.call_tool("shell_exec", {"command": "", **arguments})
    if result.is_error:
        return error_of(result) | {"refused": True}
    return dict(result.structured_content or {}) | {"text": text_of(result)}


def _ran(stdout: str) -> bool:
    """Whether the denied line's echo ran: its word alone on a line of stdout."""
    return "DENIED-LINE-RAN" in stdout.splitlines()


async def _writes(workspace: Path, command: str, writes: list[str]) -> tuple[list[dict[str, Any]], str, Person]:
    person = Person(False)
    results: list[dict[str, Any]] = []
    seen = ""
    async with shell(workspace, person) as client:
        started = await _call(client, command=command, stdin=DATA["start"], yieldAfterSeconds=1, timeoutSeconds=60)
        assert started.get("status") == "running", started
        job = started["jobId"]
        for text in writes:
            result = await _call(client, jobId=job, stdin=text)
            results.append(result)
            seen += str(result.get("stdout", ""))
            if result.get("refused"):
                break
        closed = await _call(client, jobId=job, closeStdin=True)
        seen += str(closed.get("stdout", ""))
        for _ in range(20):
            if _ran(seen) or closed.get("status") != "running":
                break
            closed = await _call(client, jobId=job, yieldAfterSeconds=2)
            seen += str(closed.get("stdout", ""))
    return results, seen, person


async def test_control_the_denied_line_alone_is_refused(workspace: Path) -> None:
    results, seen, _person = await _writes(workspace, "bash", [DATA["denied_alone"]])
    assert results[-1].get("refused") and not _ran(seen), (results, seen[-300:])


@pytest.mark.parametrize("case", sorted(CONTROLS))
async def test_control_nothing_runs(workspace: Path, case: str) -> None:
    spec = CONTROLS[case]
    _results, seen, _person = await _writes(workspace, spec["command"], spec["writes"])
    assert not _ran(seen), seen[-300:]


@pytest.mark.parametrize("case", sorted(CASES))
async def test_a_denied_line_inside_a_quote_only_the_running_shell_opened_runs(workspace: Path, case: str) -> None:
    spec = CASES[case]
    results, seen, person = await _writes(workspace, spec["command"], spec["writes"])
    assert not _ran(seen), (
        f"each write judged and sent ({len(results)} of {len(spec['writes'])}, questions: {len(person.questions)}); "
        f"the job's shell ran the denied line: {seen[-300:]!r} {[r.get('refused') for r in results]}"
    )
