r"""Red team 111 F2: a ``.git/shallow`` line git reads as an id but ``git_state_files.shallow_cuts`` does not (red team
108 F1's answer, new spellings): git's ``is_repository_shallow`` reads each line with ``get_oid_hex``, which takes the
first 40 hex digits (SHA-1) and never looks at what follows; the check takes only lines that are an id and blanks
(``^([0-9a-f]{64}|[0-9a-f]{40})\s*$``), and a 64-digit run as a SHA-256 id even in a SHA-1 repository. So
``<HEAD> x``, ``<HEAD>ZZ`` and ``<HEAD>`` + 24 more hex digits land unasked; git then takes HEAD as having no parents
(``git log`` shows one commit, checked with git 2.39) and the user's next ``git gc`` deletes the history behind it;
``mcp-guard undo`` gives back the file, not the objects.

The command lines travel as data (shallow_lines.json). A person declines every question. Each case: the call, the
user's ``git gc`` outside the box, ``mcp-guard undo`` of the call; the history (three commits) must still be there.
Controls: the bare id (red team 108's line, asked) and the same text written to ``.git/description`` (inert)."""

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
