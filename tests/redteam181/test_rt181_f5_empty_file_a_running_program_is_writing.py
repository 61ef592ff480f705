"""Red team 181 F5: "an empty file holds no work" — but an empty file may be the one a running program is writing.

(Pinned: the narrowing this red team attacked was withdrawn on 2026-12-07, before it landed; these tests keep
the question it took away. Where the text says "no longer asked" or "now", read "would not be asked".)

Issue 45 stopped asking before deleting an untracked regular file whose size was 0 (``effects.held_bytes``). A
file's size at the judgement is not what it holds: a long job (an experiment, a test run, a render) opens its
output at the start and writes it at the end, buffered; until then the file is empty and untracked. The model's
``rm`` of it is applied unasked now (before: "Git has no copy of results.csv"). The deletion keeps the file in the
history (``HistoryStore.keep``, move): where the history lies on another file system than the project (a project on
its own volume, ``/mnt/…``, WSL's ``/mnt/c``, the state dir on tmpfs), it is *copied* (0 bytes) and the name
unlinked; the job's later writes go to an inode no name reaches and are lost when it closes it. ``mcp-guard undo``
gives back the empty copy. On the same file system the inode moves into the history and the job's bytes land
there: the undo is the only way back.

Found: history elsewhere, undo gives back an empty file; same file system, undo (and ``--force``) refuses:
"HISTORY_BROKEN: what it replaced cannot be put back: ... changed since it was kept" — the rows lie in the hidden
history directory, which no tool reaches. On HEAD without the patch both are asked ("Git has no copy of ...").

Controls: the same file while it already holds bytes is still asked (declined: kept, and the job's rows land).
The command line travels as data (rt181_empty.json).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from support.boxed import Person, run, shell, undo

pytestmark = [pytest.mark.anyio]

DATA: dict[str, str] = json.loads((Path(__file__).resolve().parent / "rt181_empty.json").read_text())

# The user's job, outside the box: opens its output at the start (empty), writes it when the go file appears.
JOB = """
import pathlib, sys, time
out, go, rows, early = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3], sys.argv[4] == "early"
with open(out, "w") as f:
    if early:
        f.write(rows); f.flush()
    pathlib.Path(out + ".ready").parent.joinpath(".job-ready").write_text("1")
    while not go.exists():
        time.sleep(0.05)
    if not early:
        f.write(rows)
"""


def _start_job(workspace: Path, *, early: bool) -> tuple[subprocess.Popen[bytes], Path]:
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)  # a repository: git has no copy of the output
    script = workspace.parent / "job.py"
    script.write_text(JOB)
    go = workspace.parent / "go"
    job = subprocess.Popen(
        [
            sys.executable,
            str(script),
            str(workspace / DATA["results_name"]),
            str(go),
            DATA["rows"],
            "early" if early else "late",
        ]
    )
    deadline = time.monotonic() + 30
    while not (workspace / ".job-ready").exists():
        assert time.monotonic() < deadline and job.poll() is None, "the job did not start"
        time.sleep(0.05)
    (workspace / ".job-ready").unlink()
    return job, go


def _finish(job: subprocess.Popen[bytes], go: Path) -> None:
    go.write_text("1")
    assert job.wait(timeout=30) == 0


async def _delete(workspace: Path, person: Person) -> dict[str, Any]:
    async with shell(workspace, person) as client:
        return await run(client, DATA["delete_results"], cwd=str(workspace))


def _rows_somewhere(workspace: Path, out: dict[str, Any]) -> tuple[bool, str]:
    """Whether the job's rows are in the project, as left or after ``mcp-guard undo`` of the call."""
    results = workspace / DATA["results_name"]
    if results.exists() and results.read_text() == DATA["rows"]:
        return True, "kept"
    if not (out.get("changes") or {}).get("undo"):
        return False, "nothing to undo"
    undone = undo(str(out["auditId"]))
    if not undone[0]:
        undone = undo(str(out["auditId"]), force=True)  # (mcp-guard undo --force)
    back = results.read_text() if results.exists() else None
    return back == DATA["rows"], f"after undo {undone}: {back!r}"


async def test_attack_deleting_the_empty_output_of_a_running_job_loses_its_rows_unasked_history_elsewhere(
    workspace: Path, state_on_tmpfs: Path
) -> None:
    """The history on another file system: copied empty, the job's rows go to an unlinked inode."""
    job, go = _start_job(workspace, early=False)
    person = Person(False)  # declines the question about what the command changed
    try:
        out = await _delete(workspace, person)
    finally:
        _finish(job, go)
    found, how = _rows_somewhere(workspace, out)
    assert found or person.questions, (
        "the job's output deleted unasked while it was being written; its rows are lost, undo included", how,
        out.get("changes"), out.get("transaction"))  # fmt: skip


async def test_attack_deleting_the_empty_output_of_a_running_job_loses_its_rows_unasked_same_file_system(
    workspace: Path,
) -> None:
    """The history on the project's file system: the inode moves into the history and the job's rows land there,
    but ``mcp-guard undo`` (even ``--force``) refuses to put back an entry that "changed since it was kept"."""
    job, go = _start_job(workspace, early=False)
    person = Person(False)
    try:
        out = await _delete(workspace, person)
    finally:
        _finish(job, go)
    found, how = _rows_somewhere(workspace, out)
    assert found or person.questions, (
        "the job's output deleted unasked while it was being written; undo cannot give its rows back", how,
        out.get("changes"))  # fmt: skip


async def test_control_the_output_already_holding_bytes_is_asked(workspace: Path, state_on_tmpfs: Path) -> None:
    job, go = _start_job(workspace, early=True)
    person = Person(False)
    try:
        await _delete(workspace, person)
    finally:
        _finish(job, go)
    assert any("Git has no copy of results.csv" in q for q in person.questions), person.questions
    assert (workspace / DATA["results_name"]).read_text() == DATA["rows"]
