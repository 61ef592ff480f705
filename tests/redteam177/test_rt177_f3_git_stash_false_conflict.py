"""Red team 177 F3 (MEDIUM, a false conflict): after a command edits a tracked file, the user's ``git stash`` and
``git stash pop`` (a look at the tree without the change, then the change back) leave the file with the very bytes
and mode the call left, but a new inode; a command's record has no digest, so ``mcp-guard undo`` of the call stops
at UNDO_CONFLICT and only ``--force`` goes on. Control: ``git status``/``git add``/``git reset`` (the file untouched):
the undo passes. A person declines every question (none is asked)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.boxed import Person, run, shell
from support.fidelity import Tree, differences, snapshot
from support.redteam import mcp_guard

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None or shutil.which("git") is None, reason="bwrap or git missing"),
]


def _git(workspace: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@example.org", "GIT_COMMITTER_NAME": "u",
           "GIT_COMMITTER_EMAIL": "u@example.org", "GIT_CONFIG_NOSYSTEM": "1"}  # fmt: skip
    subprocess.run(["git", *args], cwd=workspace, check=True, capture_output=True, env=env, timeout=60)


async def _edited(workspace: Path) -> tuple[str, Tree]:
    _git(workspace, "init", "-q")
    _git(workspace, "add", "-A")
    _git(workspace, "commit", "-qm", "init")
    before = snapshot(workspace)
    person = Person(False)
    async with shell(workspace, person) as client:
        out: dict[str, Any] = await run(client, "echo more >> hello.txt", cwd=str(workspace))
    assert out["transaction"] == "applied", (out, person.questions)
    return str(out["auditId"]), before


def _undo(audit_id: str) -> str:
    done = mcp_guard("undo", audit_id)
    return "" if done.returncode == 0 else f"exit {done.returncode}: {done.stderr.strip()[-300:]}"


def _outside_git(found: list[Any]) -> list[str]:
    return [str(d) for d in found if "/.git" not in str(d) and ".git/" not in str(d)]


# Known and left (before the ctime rule too; fail-closed, nothing lost): the same bytes on a new inode, and a
# command's record keeps no digest. Strict: it fails the day it passes.
@pytest.mark.xfail(strict=True, reason="a command's record keeps no digest of what it left (known)")
async def test_undo_after_git_stash_and_pop(workspace: Path) -> None:
    audit_id, before = await _edited(workspace)
    _git(workspace, "stash", "-q")
    _git(workspace, "stash", "pop", "-q")
    assert (workspace / "hello.txt").read_text() == "hello\nworld\nmore\n"
    assert _undo(audit_id) == ""
    assert _outside_git(differences(before, snapshot(workspace))) == []


async def test_control_undo_after_git_status_add_reset(workspace: Path) -> None:
    audit_id, before = await _edited(workspace)
    _git(workspace, "status")
    _git(workspace, "add", "-A")
    _git(workspace, "reset", "-q")
    assert _undo(audit_id) == ""
    assert _outside_git(differences(before, snapshot(workspace))) == []
