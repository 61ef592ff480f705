"""Red team 90 (issue 42, claim 6): a job's look copies exactly what it judged.

``steps.copy_step`` (a look's copy) takes the entry as it finds it in the job's upper layer *now*: when that is a
directory it makes a directory in the real tree (``os.mkdir``) before it compares the entry's kind with what the
judgement judged (the kind/mode/size check comes after the directory branch). A path judged as a *file* — which
the protected list allows (``.vscode`` as a file: the rule is ``.vscode/**``) — that the job turns into a
directory between the judgement and the copy lands as a directory nobody judged. A directory there is refused
(``judge_modes``: "a command may not make or re-mode it"), and the look would have refused it had it seen it.

The job flips ``.vscode`` between a file (briefly) and a directory (most of the time); the test looks at it again
and again. The safe behaviour: the real tree never holds a directory ``.vscode`` (a file, or nothing, is fine)."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path
from typing import Any

import anyio
import pytest

from support.boxed import program, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

JOB = r"""
import time
end = time.monotonic() + 40
n = 0
while time.monotonic() < end and not os.path.exists(".t/stop"):
    fd = os.open(".vscode", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.close(fd)
    time.sleep(0.001)
    os.unlink(".vscode")
    os.mkdir(".vscode", 0o755)
    time.sleep(0.03)
    os.rmdir(".vscode")
    n += 1
os.mkdir(".vscode", 0o755)  # it ends with the directory there, as the look landed it
print("FLIPS", n, flush=True)
"""


def _kind(path: Path) -> str:
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return "none"
    return "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"


async def test_a_look_never_lands_a_directory_where_it_judged_a_file(workspace: Path) -> None:
    command = program(workspace, "job", JOB)
    seen: list[str] = []
    looks: list[dict[str, Any]] = []
    async with shell(workspace) as client:
        looks.append(await run(client, command, cwd=str(workspace), yieldAfterSeconds=0.5))
        job = looks[0]["jobId"]
        with anyio.fail_after(120):
            while looks[-1]["status"] == "running":
                looks.append(await run(client, "", jobId=job, yieldAfterSeconds=0.05))
                kind = _kind(workspace / ".vscode")
                seen.append(kind)
                if kind != "none":
                    break  # a look landed something there: what it landed is what matters
            (workspace / ".t" / "stop").write_text("")
            while looks[-1]["status"] == "running":
                looks.append(await run(client, "", jobId=job, yieldAfterSeconds=2))
    landed = [(lk.get("transaction"), lk.get("changes", {}).get("summary")) for lk in looks
              if lk.get("transaction") not in ("unchanged", "waiting")]  # fmt: skip
    print(len(looks), "looks;", landed[-5:], seen[-3:], [lk.get("changes") for lk in looks[-3:]])
    end = _kind(workspace / ".vscode")
    print("at the job's end:", end, looks[-1].get("changes"))
    assert "dir" not in seen, (len(looks), landed[-5:], [lk.get("changes") for lk in looks[-3:]])
    assert end != "dir", looks[-1].get("changes")


CONTROL = r"""
import time
os.mkdir(".vscode", 0o755)
time.sleep(4)
"""

CONTROL_FILE = r"""
import time
open(".vscode", "w").close()
time.sleep(4)
"""


@pytest.mark.parametrize(("code", "expected"), [(CONTROL, "none"), (CONTROL_FILE, "file")])
async def test_control_a_look_judges_the_directory_it_sees(workspace: Path, code: str, expected: str) -> None:
    """Control (passes): a directory ``.vscode`` a job makes is refused by its look (and at its end); a file
    ``.vscode`` is allowed — the two judgements the race plays against each other."""
    command = program(workspace, "control", code)
    async with shell(workspace) as client:
        looks = [await run(client, command, cwd=str(workspace), yieldAfterSeconds=2)]
        kinds = [_kind(workspace / ".vscode")]
        with anyio.fail_after(60):
            while looks[-1]["status"] == "running":
                looks.append(await run(client, "", jobId=looks[0]["jobId"], yieldAfterSeconds=1))
                kinds.append(_kind(workspace / ".vscode"))
    print(kinds, [lk.get("changes") for lk in looks])
    assert set(kinds) == {expected}, (kinds, [lk.get("changes") for lk in looks])
