"""Issue 42 claim 6: "A background job's look copies exactly what it judged — e.g. a job that changes a file's bytes
(same size) right after a look judged it"; docs/shell_exec.md "Background jobs": "Each look at a job applies what it
did so far and needs no question"; "putting a changed file back to … any other version git has … asks".

Setup: a git repository; ``zz.txt`` committed as ``AAAA``, then edited to ``BBBB`` (uncommitted work).
Command (a background job, data in .t/job.py): after the start's own look, rewrite ``zz.txt`` to ``CCCC`` (not a
version git has: a plain edit, no question) and make 2,000 new files under ``b/``; then wait until a look copies them
(their access time moves: the job sees when the server reads them — b/ is copied before zz.txt) and at once rewrite
``zz.txt`` in place to ``AAAA`` — same size.
Control: a job that writes ``AAAA`` outright is not applied by a look (put-back of uncommitted work waits/asks).
Expected: the look lands ``CCCC`` (what it judged) or nothing for zz.txt; never ``AAAA`` without a question.
Observed: the real ``zz.txt`` becomes ``AAAA`` after the look — uncommitted work put back to git's version with no
question (and at the job's end there is nothing left to judge: the copy and the tree agree).

Guessed cause: ``steps.copy_step`` checks only kind, mode and size of the job's file against the judged change, and
``nofollow.copy_beside`` compares the file after the copy with its stat taken at copy time, not at judgement time:
bytes changed between the judgement and the copy (same size) land unjudged."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import anyio
import pytest

from support.boxed import Person, program, run, shell

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None or shutil.which("git") is None, reason="bwrap or git missing"),
]

JOB = """
import time
def put(text):
    with open('zz.txt', 'r+') as fh:
        fh.write(text)
time.sleep(2.5)  # after the start's own look
put('CCCC\\n')
os.makedirs('b', exist_ok=True)
for i in range(2000):
    open('b/%04d' % i, 'w').write('x' * 10)
time.sleep(0.05)
watched = ['b/0000', 'b/1000', 'b/1999']
before = {w: os.stat(w).st_atime_ns for w in watched}
deadline = time.time() + 60
while time.time() < deadline:
    if any(os.stat(w).st_atime_ns != before[w] for w in watched):
        put('AAAA\\n')
        print('switched', [w for w in watched if os.stat(w).st_atime_ns != before[w]], flush=True)
        break
    time.sleep(0.0005)
time.sleep(60)
"""


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@e", *args], check=True,
                   capture_output=True, timeout=60)  # fmt: skip


async def test_a_look_lands_only_the_bytes_it_judged(workspace: Path) -> None:
    _git(workspace, "init", "-q")
    (workspace / "zz.txt").write_text("AAAA\n")
    _git(workspace, "add", "zz.txt")
    _git(workspace, "commit", "-q", "-m", "one")
    (workspace / "zz.txt").write_text("BBBB\n")  # uncommitted work
    command = program(workspace, "job", JOB)
    async with shell(workspace, Person(answer=False)) as client:
        started = await run(client, command, yieldAfterSeconds=1)
        assert started["status"] == "running", started
        print(
            "START",
            repr(started["stdout"]),
            started["transaction"],
            started["changes"].get("summary"),
            started["changes"].get("reason"),
        )
        landed = ""
        for _ in range(6):
            with anyio.fail_after(90):
                look = await run(client, "", jobId=started["jobId"], yieldAfterSeconds=3)
            landed = (workspace / "zz.txt").read_text()
            print(
                "LOOK",
                look["stdout"][-100:],
                look["transaction"],
                look["changes"].get("summary"),
                look["changes"].get("reason"),
                repr(landed),
                (workspace / "b").exists(),
            )
            if "switched" in look["stdout"] and (workspace / "b").exists():
                break
        await run(client, "", jobId=started["jobId"], signal="KILL")
    assert landed != "AAAA\n", (
        f"a look landed zz.txt back at git's version (AAAA) over uncommitted BBBB; it judged CCCC "
        f"(look: {look['transaction']}, {look['changes'].get('summary')!r})"
    )


async def test_control_a_job_putting_the_file_back_outright_is_not_applied_by_a_look(workspace: Path) -> None:
    _git(workspace, "init", "-q")
    (workspace / "zz.txt").write_text("AAAA\n")
    _git(workspace, "add", "zz.txt")
    _git(workspace, "commit", "-q", "-m", "one")
    (workspace / "zz.txt").write_text("BBBB\n")
    command = program(workspace, "job", "import time\nopen('zz.txt', 'r+').write('AAAA\\n')\ntime.sleep(60)\n")
    async with shell(workspace, Person(answer=False)) as client:
        started = await run(client, command, yieldAfterSeconds=1)
        with anyio.fail_after(90):
            await run(client, "", jobId=started["jobId"], yieldAfterSeconds=2)
        landed = (workspace / "zz.txt").read_text()
        await run(client, "", jobId=started["jobId"], signal="KILL")
    assert landed == "BBBB\n", landed
