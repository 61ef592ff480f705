"""docs/shell_exec.md "Judging": asked are "deleting or emptying a file git has no copy of ... and putting a changed
file back to the index's content (uncommitted work thrown away: ``git reset --hard``, ``git checkout -- f``, ``git
restore``)"; a committed, unchanged file is backed by git. Nothing there limits it to SHA-1 repositories (only
``changes/git_index.py``'s docstring says "sha-1 repositories").

In a SHA-256 repository (``git init --object-format=sha256``, a supported git format since 2.29):
- miss: ``git checkout -- notes.txt`` throws away an afternoon of uncommitted changes and nothing is asked (the
  control, the same in a SHA-1 repository, is asked);
- false alarm: deleting two committed, unchanged files asks "Git has no copy of ..." (the control asks nothing).
Guessed cause: the index reader takes 20-byte object ids (and SHA-1 blob ids), so a SHA-256 index reads as
empty or wrong: every file looks untracked."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

POLICY = load_policy()
pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")


def _git(*args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True, capture_output=True)


def _repo(base: Path, fmt: str) -> Copy:
    copy = Copy(base)
    _git("init", "-q", f"--object-format={fmt}", str(copy.root))
    for name in ("notes.txt", "a.txt", "b.txt"):
        (copy.root / name).write_text(f"{name} as committed\n")
    _git("-C", str(copy.root), "add", ".")
    _git("-C", str(copy.root), "commit", "-qm", "one")
    return copy


def _asks(copy: Copy, script: str) -> list[str]:
    j = judge([copy.run(script)], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    return list(j.asks)


def test_attack_discarding_uncommitted_changes(tmp_path: Path) -> None:
    for fmt in ("sha1", "sha256"):  # the control first
        copy = _repo(tmp_path / fmt, fmt)
        (copy.root / "notes.txt").write_text("notes.txt as committed\nand an afternoon of work, never added\n")
        assert _asks(copy, "git checkout -- notes.txt"), f"{fmt}: uncommitted work thrown away without a question"


def test_false_alarm_deleting_committed_files(tmp_path: Path) -> None:
    for fmt in ("sha1", "sha256"):  # the control first
        copy = _repo(tmp_path / fmt, fmt)
        assert _asks(copy, "rm a.txt b.txt") == [], fmt
