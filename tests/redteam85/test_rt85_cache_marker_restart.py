"""Red team 85 F3: red team 82 F3's fix (a cache marker this server landed does not make ``out/`` a cache directory)
keeps what it landed in memory (``Applier.landed``), so a marker planted by ANOTHER server -- or by this server
before it was started again (every new session of the client is a new server) -- still counts.

Session 1 (one server process): ``out/CACHEDIR.TAG`` written into the user's own ``out/`` (nothing asked). Session 2
(a new server process, same state and history): ``rm -rf out`` with the user's six untracked files -- nothing asked,
the person (who declines everything) never sees it. In one session the second call is asked (rt82's test).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

TAG = "echo 'Signature: 8a477f597d28d172789f06886806bc55' > out/CACHEDIR.TAG"
REMOVE = "rm -rf out"


async def test_a_cache_marker_planted_by_an_earlier_server_does_not_unask_the_deletion(workspace: Path) -> None:
    root = workspace / "p"
    (root / "out").mkdir(parents=True)
    for i in range(6):
        (root / "out" / f"results{i}.csv").write_text(f"the user's own results {i}\n")
    person = Person(False)  # declines every question
    async with shell(workspace, person) as client:
        first = await run(client, TAG, cwd=str(root))
    assert first["transaction"] == "applied", first
    async with shell(workspace, person) as client:  # the next session: a new server
        second = await run(client, REMOVE, cwd=str(root))
    print(second["transaction"], second["changes"]["summary"], person.questions)
    assert (root / "out" / "results0.csv").exists(), ("six files deleted with no question", second["transaction"])
