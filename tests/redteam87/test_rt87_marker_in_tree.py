"""Red team 87: a cache marker that lands inside a tree placed whole is not in the planted log.

``files.planted`` logs the paths a call record NAMES (``CallRecords.write``). A new directory is placed whole
(``placing._placed``: one record, ``tree=True``, for the directory only): the files inside it are never named, so a
``CACHEDIR.TAG`` inside it is not logged. The user's ``out/`` (untracked results) re-created by a command with the
same files plus a marker is placed as one tree; the next call's ``rm -rf out`` is then a cache's deletion.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from mcp_server_guard.paths import state_dir
from support.boxed import Person, program, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

TAG = "Signature: 8a477f597d28d172789f06886806bc55\n"

# Call 1: out/ made again, whole, with the user's files as they were and a cache marker.
REMAKE = f"""
import shutil
shutil.copytree("out", "out.new")
open("out.new/CACHEDIR.TAG", "w").write({TAG!r})
shutil.rmtree("out")
os.rename("out.new", "out")
"""

# Call 2: the user's results deleted.
REMOVE = """
import shutil
shutil.rmtree("out")
"""


def _records() -> list[dict[str, Any]]:
    calls = state_dir() / "history" / "calls"
    return [json.loads(p.read_text()) for p in sorted(calls.glob("*.json"))] if calls.exists() else []


async def test_a_marker_inside_a_tree_placed_whole_is_still_planted(workspace: Path) -> None:
    root = workspace / "p"
    (root / "out").mkdir(parents=True)
    for i in range(6):
        (root / "out" / f"results{i}.csv").write_text(f"the user's own results {i}\n")
    person = Person(False)  # declines every question
    remake = program(root, "remake", REMAKE)
    remove = program(root, "remove", REMOVE)
    async with shell(workspace, person) as client:
        first = await run(client, remake, cwd=str(root))
        print("call 1:", first.get("transaction"), first.get("summary"), person.questions)
        print("records:", [[c.get("path"), c.get("action"), c.get("tree")] for r in _records() for c in r["changes"]])
        assert (root / "out" / "CACHEDIR.TAG").exists(), ("setup: the marker did not land", first)
        second = await run(client, remove, cwd=str(root))
        print("call 2:", second.get("transaction"), second.get("summary"), person.questions)
    assert (root / "out" / "results0.csv").exists(), (
        "six untracked files of the user deleted with no question",
        second.get("transaction"),
        person.questions,
    )
