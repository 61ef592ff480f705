"""Red team 107 F1 (issue 42 items 4 and 6): a background job's look deletes the user's files as "kept beside,
compressed" while the compressed files it judged them kept in wait for the job's end; the job then removes those, and
the files are gone from the project with no question.

``effects._tally`` takes a deleted file for no loss when ``compressed.kept_beside`` finds a file the same change set
made beside it (``notes.txt.gz``) holding its bytes. At a look (``Transactions.apply_live``) the deletion lands, but
the ``.gz`` file does not: ``plan.live_waits`` leaves it for the job's end (past the look's 64 MiB copy budget here;
the same happens when the job rewrites it between the judgement and the copy: ``copy_step`` checks only kind, mode
and size). The job then removes the ``.gz`` files and ends: nothing is left to judge (the look's deletions are the
job's own), and the five untracked notes (more than ``max_unbacked_files``) are gone unasked. Control: the same job
without the compressed copies is asked (declined: the notes stay).

The job's program travels as data (look_compressed_job.py). A person declines every question."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

JOB = Path(__file__).resolve().parent / "look_compressed_job.py"


async def _job(workspace: Path, mode: str) -> tuple[list[dict[str, Any]], Person]:
    for i in range(5):
        (workspace / f"notes{i}.txt").write_text(f"the user's own notes {i}\n" * 20)
    (workspace / ".t").mkdir()
    shutil.copy(JOB, workspace / ".t" / "job.py")
    person = Person(False)
    async with shell(workspace, person) as client:
        looks = [await run(client, f"python3 .t/job.py {mode} 8", cwd=str(workspace), yieldAfterSeconds=4)]
        with anyio.fail_after(120):
            while looks[-1]["status"] == "running":
                looks.append(await run(client, "", jobId=looks[0]["jobId"], yieldAfterSeconds=5))
    return looks, person


def _asked(looks: list[dict[str, Any]], person: Person) -> bool:
    return bool(person.questions) or any(k.get("transaction") in ("held", "declined") for k in looks)


def _told(looks: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(k.get("status"), k.get("transaction"), k.get("changes", {}).get("summary")) for k in looks]


async def test_control_a_job_deleting_five_untracked_notes_is_asked(workspace: Path) -> None:
    looks, person = await _job(workspace, "plain")
    left = [i for i in range(5) if (workspace / f"notes{i}.txt").exists()]
    assert _asked(looks, person) and len(left) >= 2, _told(looks)


async def test_a_look_deletes_notes_only_as_kept_in_files_it_did_not_copy(workspace: Path) -> None:
    looks, person = await _job(workspace, "gz")
    left = [i for i in range(5) if (workspace / f"notes{i}.txt").exists()]
    kept = [i for i in range(5) if (workspace / f"notes{i}.txt.gz").exists()]
    assert left or kept or _asked(looks, person), ("notes gone unasked", _told(looks))
