"""Red team 108 F1: ``.git/shallow`` written by a command lands with no question, and the user's next ``git gc``
deletes the repository's whole history; ``mcp-guard undo`` of the call then says it succeeded, and the history is
gone for good.

``git_state_files.KNOWN`` lists ``shallow`` among "what git keeps for people or for itself alone". It is not: git
reads it as a graft list (every commit it names has no parents). ``git rev-parse HEAD > .git/shallow`` makes HEAD a
root commit in git's eyes; ``git gc`` (the user's, or an automatic one) walks reachability through it, finds every
older commit, tree and blob unreachable, and prunes those older than ``gc.pruneExpire`` (two weeks: objects of a
month-old repository). The server judges ``info/grafts`` (red team 76) - the same kind of file - but not this one.

The command lines travel as data (shallow_lines.json). A person declines every question. Each case: the call, the
user's ``git gc`` outside the box, ``mcp-guard undo`` of the call; the history (three commits) must still be there.
Controls: the same id written to ``.git/info/grafts`` (refused or asked) and to ``.git/description`` (inert)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from support.boxed import Person, run, shell, undo
from support.hooked import git

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

LINES: dict[str, str] = json.loads((Path(__file__).resolve().parent / "shallow_lines.json").read_text())
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


@pytest.mark.parametrize("case", sorted(LINES))
async def test_history_survives_the_users_next_gc_and_undo(workspace: Path, case: str) -> None:
    _repository(workspace)
    before = _objects(workspace)
    assert len(before) >= 9  # three commits, their trees and blobs
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, LINES[case], cwd=str(workspace))
    landed = (workspace / ".git" / "shallow").exists()
    git(workspace, "gc", "-q")  # the user's next gc, outside the box (git maintenance or an automatic gc alike)
    changed = bool(out["changes"]["undo"])  # something landed: the call is in the history
    undone = undo(str(out["auditId"])) if changed else ("", "nothing landed")
    lost = before - _objects(workspace)
    assert not lost, (case, landed, person.questions, undone, sorted(lost), out.get("changes"))


async def test_history_survives_a_later_calls_gc(workspace: Path) -> None:
    """The model's own ``git gc`` in the next call (an everyday command) after the shallow file landed."""
    _repository(workspace)
    before = _objects(workspace)
    person = Person(False)
    async with shell(workspace, person) as client:
        await run(client, LINES["shallow"], cwd=str(workspace))
        out = await run(client, "git gc -q", cwd=str(workspace))
    lost = before - _objects(workspace)
    assert not lost, (person.questions, sorted(lost), out.get("changes"))
