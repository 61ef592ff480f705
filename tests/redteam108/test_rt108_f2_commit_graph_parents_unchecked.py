"""Red team 108 F2: a commit graph that gives a commit other parents (here: none) lands with no question, and the
user's next ``git gc`` deletes the history behind it; ``mcp-guard undo`` of the call cannot bring it back.

``git_refs`` checks a commit graph the command writes (``git_objects.graph_lies``) only for the root tree it gives
each commit, not for its parents. Git takes a commit's parents from the graph when it reaches it by a walk
(``parse_commit_in_graph``: ``git log``, ``rebase``'s list of commits, ``gc``'s reachability), so a graph in which
HEAD has no parent is another history - what ``info/grafts`` gives, refused since red team 76. ``git gc`` (the
user's, or an automatic one) finds every older commit, tree and blob unreachable and prunes those older than
``gc.pruneExpire`` (two weeks: objects of a month-old repository).

The model's program travels as data (graph_cut.payload). A person declines every question. Each case: the call, the
user's ``git gc`` outside the box, ``mcp-guard undo`` of the call; every object the repository held must still be
there. Control: the same program leaving the graph as git wrote it (``--as-written``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell, undo
from support.hooked import git

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

CUT = (Path(__file__).resolve().parent / "graph_cut.payload").read_text()
MONTH = 30 * 24 * 3600


def _repository(root: Path) -> None:
    """Three commits, packed, their objects a month old (a repository in everyday use)."""
    git(root, "init", "-q", "-b", "main")
    for i in range(3):
        (root / f"f{i}.txt").write_text(f"version {i}\n")
        git(root, "add", "-A")
        git(root, "commit", "-q", "--no-verify", "-m", f"c{i}")
    git(root, "gc", "-q")
    old = time.time() - MONTH
    for dirpath, _dirs, files in os.walk(root / ".git" / "objects"):
        for name in files:
            os.utime(os.path.join(dirpath, name), (old, old))


def _objects(root: Path) -> set[str]:
    """Every object id the repository holds, loose or packed."""
    done = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch-check=%(objectname)"], cwd=root,
                          capture_output=True, text=True, timeout=30, check=True)  # fmt: skip
    return set(done.stdout.split())


@pytest.mark.parametrize("how", ["cut", "as-written"])
async def test_history_survives_the_users_next_gc_and_undo(workspace: Path, how: str) -> None:
    _repository(workspace)
    before = _objects(workspace)
    command = program(workspace, "cut", CUT) + (" --as-written" if how == "as-written" else "")
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, command, cwd=str(workspace))
    assert "cut " in (out.get("stdout") or ""), out
    # The user's next gc, outside the box (git maintenance or an automatic gc alike): its exit status aside.
    subprocess.run(["git", "gc", "-q"], cwd=workspace, capture_output=True, timeout=60, check=False)
    changed = bool(out["changes"]["undo"])  # something landed: the call is in the history
    undone = undo(str(out["auditId"]), force=True) if changed else ("", "nothing landed")
    lost = before - _objects(workspace)
    assert not lost, (how, person.questions, undone, sorted(lost), out.get("changes"))
