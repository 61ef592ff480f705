"""A reflog too long to read whole (past 16 MiB) whose newest entries a command drops is taken as losing work: read
in part, the entries at its end (the newest) were never seen, and a stash only they named went unasked. Control: the
same drop in a reflog of ordinary length is asked too."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from support.boxed import Person, run, shell
from support.hooked import git_out, one_commit, stashed

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

DROP = "git stash drop -q stash@{1}"


def _pad_reflog(root: Path, lines: int) -> None:
    """Older entries put before the stash reflog's own, each naming the first commit (reachable anyway)."""
    log = root / ".git" / "logs" / "refs" / "stash"
    commit = git_out(root, "rev-parse", "HEAD").strip()
    entry = f"{'0' * 40} {commit} Someone <someone@example.com> 1700000000 +0000\tWIP on main: padding entry\n"
    log.write_text(entry * lines + log.read_text())


def _named(root: Path, commit: str) -> bool:
    listed = subprocess.run(["git", "rev-list", "--all", "--reflog"], cwd=root, capture_output=True, text=True,
                            timeout=60, check=False).stdout.split()  # fmt: skip
    return commit in listed


async def _drop(root: Path, padding: int) -> tuple[Person, bool, dict[str, object]]:
    one_commit(root)
    first = stashed(root, "first stash: only here\n")
    stashed(root, "second stash\n")
    if padding:
        _pad_reflog(root, padding)
    assert _named(root, first)
    person = Person(False)
    async with shell(root, person) as client:
        out = await run(client, DROP, cwd=str(root))
    return person, _named(root, first), out


async def test_control_a_stash_dropped_from_a_short_reflog_is_asked(workspace: Path) -> None:
    person, still, out = await _drop(workspace, 0)
    assert person.questions and still, (out.get("transaction"), out.get("changes"))


async def test_a_stash_dropped_from_a_reflog_past_what_is_read_is_asked(workspace: Path) -> None:
    log_size = (16 << 20) // 100 + 1000  # entries of ~110 bytes: past 16 MiB
    person, still, out = await _drop(workspace, log_size)
    assert (workspace / ".git/logs/refs/stash").stat().st_size > 16 << 20 or not still
    assert person.questions and still, ("the stash only the reflog's end named is lost unasked", out.get("transaction"))
