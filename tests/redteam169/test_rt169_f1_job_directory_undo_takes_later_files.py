"""Red team 169 F1: ``mcp-guard undo`` of a background job that made a directory takes away, and says it succeeded,
a file the user put in that directory after the job, once a later call has set the directory's time back.

A job's look lands a directory it made through ``steps.copy_step``: its record is a ``create`` of kind ``dir`` with no
``tree`` flag. ``revert.as_left`` takes such a directory for "as the call left it" when its (device, inode,
modification time) match the record — nothing looks at what is in it, nor at its ctime. A directory's time is the one
thing a later call may set back unasked (``touch -d @T d``: "set the time of d/"). The user's own file in ``d``
(written after the job) then goes with ``d`` into the history under the undo's id; the undo exits 0, says nothing
of it, and the user's file is gone from the project (only an undo of that undo brings it back, and the history's
eviction may take it). A person declines every question (none is asked).

Control: the same job and the same later file of the user's, without the call that sets the time back: the undo
refuses (UNDO_CONFLICT) and the file stays. The job's program travels as data (job_makes_dir.py).

Answered: an undo takes a directory the call made (its tree not counted) for as the call left it only while every
entry in it is one a record of the call names (``undoing._holds_others``): the user's file makes it UNDO_CONFLICT."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from support import console_script
from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

HERE = Path(__file__).resolve().parent
NOTES = "the user's own notes, written after the job\n"


def _undo(audit_id: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([console_script("mcp-guard"), "undo", audit_id], capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip


async def _session(workspace: Path, *, set_time_back: bool) -> tuple[str, list[Any], Person]:
    (workspace / ".t").mkdir()
    shutil.copy(HERE / "job_makes_dir.py", workspace / ".t" / "job.py")
    person = Person(False)
    told: list[Any] = []
    async with shell(workspace, person) as client:
        looks = [await run(client, "python3 .t/job.py 6", cwd=str(workspace), yieldAfterSeconds=3)]
        with anyio.fail_after(120):
            while looks[-1]["status"] == "running":
                looks.append(await run(client, "", jobId=looks[0]["jobId"], yieldAfterSeconds=5))
        told += [(k.get("status"), k.get("transaction"), k.get("auditId")) for k in looks]
        job_id = str(looks[0]["auditId"])
        assert (workspace / "d" / "f.txt").is_file(), told  # the look landed d and d/f.txt
        left = os.stat(workspace / "d").st_mtime_ns
        # The user's own file, put in the job's directory afterwards (outside any tool).
        (workspace / "d" / "notes.txt").write_text(NOTES)
        if set_time_back:
            sec, ns = divmod(left, 10**9)
            out = await run(client, f"touch -d @{sec}.{ns:09d} d", cwd=str(workspace))
            told.append(("touch", out.get("transaction"), (out.get("changes") or {}).get("summary")))
    return job_id, told, person


async def test_undo_of_a_job_keeps_a_file_put_in_its_directory_later(workspace: Path) -> None:
    job_id, told, person = await _session(workspace, set_time_back=True)
    done = _undo(job_id)
    notes = workspace / "d" / "notes.txt"
    kept = notes.is_file() and notes.read_text() == NOTES
    assert kept or done.returncode != 0, ("the user's file gone, undo said", done.returncode, done.stdout,
                                          done.stderr, told, person.questions)  # fmt: skip


async def test_control_without_the_time_set_back_the_undo_refuses(workspace: Path) -> None:
    job_id, told, _person = await _session(workspace, set_time_back=False)
    done = _undo(job_id)
    notes = workspace / "d" / "notes.txt"
    assert done.returncode != 0 and notes.read_text() == NOTES, (done.returncode, done.stdout, done.stderr, told)
