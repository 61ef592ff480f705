"""Red team 5b: a job's look copies a rebase ``strategy`` file other than the one it judged.

``git_verdicts._git_state_verdict`` judges ``rebase-merge/strategy`` (and ``strategy_opts``, ``sequencer/opts``) by
what it holds: a strategy naming a program by its path is refused (git runs ``git-merge-<strategy>`` on
``--continue``). But ``effects._BY_CONTENT`` — the names a running job's look leaves for the job's end because they
are judged by content — lists the todo names only, not the strategy names (red team 4 F0 was the same race for
package.json). A job that keeps renaming a plain and a path-naming strategy into place gets the path one copied by a
look that judged the plain one; at the job's end the real file already holds it (no change left to judge).

The control (one plain call writing the path-naming strategy) is refused, as documented.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]
PLAIN = "ort\n"
PATHED = "../../tools/evil\n"  # names a program by its path


def _repo(workspace: Path) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", *args], cwd=workspace, check=True, capture_output=True, env=env)
    (workspace / ".git" / "rebase-merge").mkdir()
    (workspace / ".git" / "rebase-merge" / "strategy").write_text(PLAIN)


async def test_control_a_plain_call_writing_a_path_strategy_is_refused(workspace: Path) -> None:
    _repo(workspace)
    write = program(workspace, "w", f"open('.git/rebase-merge/strategy', 'w').write({PATHED!r})\n")
    async with shell(workspace, Person(answer=False)) as client:
        out = await run(client, write)
    assert (workspace / ".git" / "rebase-merge" / "strategy").read_text() == PLAIN, out


async def test_attack_job_flips_strategy_between_a_looks_judgement_and_its_copy(workspace: Path) -> None:
    _repo(workspace)
    body = (
        "import time\nend = time.time() + 8\ni = 0\n"
        "while time.time() < end:\n"
        f"    open('.git/rebase-merge/s.tmp', 'w').write({PLAIN!r} if i % 2 == 0 else {PATHED!r})\n"
        "    os.rename('.git/rebase-merge/s.tmp', '.git/rebase-merge/strategy')\n"
        "    i += 1\n"
        f"open('.git/rebase-merge/s.tmp', 'w').write({PATHED!r})\n"
        "os.rename('.git/rebase-merge/s.tmp', '.git/rebase-merge/strategy')\n"
    )
    flip = program(workspace, "flip", body)
    person = Person(answer=False)
    seen: list[str] = []
    async with shell(workspace, person) as client:
        r = await client.call_tool("shell_exec", {"command": flip, "yieldAfterSeconds": 1, "timeoutSeconds": 60})
        job = dict(r.structured_content).get("jobId")
        for _ in range(60):
            if not job:
                break
            r = await client.call_tool("shell_exec", {"command": "", "jobId": job, "yieldAfterSeconds": 0.3})
            out = dict(r.structured_content)
            seen.append((workspace / ".git" / "rebase-merge" / "strategy").read_text())
            if out.get("status") == "exited":
                break
    final = (workspace / ".git" / "rebase-merge" / "strategy").read_text()
    assert PATHED not in seen and final == PLAIN, (
        f"a path-naming strategy landed: after looks {sorted(set(seen))}, final {final!r}, questions {person.questions}"
    )
