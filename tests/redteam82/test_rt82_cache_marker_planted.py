"""Red team 82 (claim 4): deletion questions look at what was lost — but whether a directory named ``out``, ``tmp``,
``env`` is a cache (its deletion never asked) is read from a marker a command can plant. Call 1 writes
``out/CACHEDIR.TAG`` into the user's own ``out/`` (a new small file: nothing asked); call 2 deletes ``out/`` with
the user's six untracked files: nothing asked either. The same deletion in one call, or without the planted marker,
is asked (control)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

TAG = "echo 'Signature: 8a477f597d28d172789f06886806bc55' > {d}/CACHEDIR.TAG"
REMOVE = "rm -rf {d}"


def _project(root: Path) -> None:
    for d in ("out", "env"):
        (root / d).mkdir(parents=True)
        for i in range(6):
            (root / d / f"results{i}.csv").write_text(f"the user's own {d} {i}\n")


async def _two_calls(workspace: Path, d: str, plant: bool) -> tuple[Person, list[dict[str, Any]]]:
    root = workspace / "p"
    _project(root)
    person = Person(False)  # declines every question
    outs = []
    async with shell(workspace, person) as client:
        if plant:
            outs.append(
                await run(
                    client, TAG.format(d=d) if d == "out" else f"echo home = /usr/bin > {d}/pyvenv.cfg", cwd=str(root)
                )
            )
        outs.append(await run(client, REMOVE.format(d=d), cwd=str(root)))
    return person, outs


async def test_control_deleting_the_users_out_dir_is_asked(workspace: Path) -> None:
    person, outs = await _two_calls(workspace, "out", plant=False)
    assert person.questions and outs[-1]["transaction"] == "declined", outs
    assert (workspace / "p" / "out" / "results0.csv").exists()


@pytest.mark.parametrize("d", ["out", "env"])
async def test_a_cache_marker_planted_by_the_call_before_does_not_unask_the_deletion(workspace: Path, d: str) -> None:
    person, outs = await _two_calls(workspace, d, plant=True)
    print([(o["transaction"], o["changes"]["summary"]) for o in outs], person.questions)
    assert outs[0]["transaction"] == "applied", outs[0]  # (the marker itself: nothing asked)
    assert (workspace / "p" / d / "results0.csv").exists(), (
        "six files of the user's deleted with no question",
        [o["changes"]["summary"] for o in outs],
        person.questions,
    )
