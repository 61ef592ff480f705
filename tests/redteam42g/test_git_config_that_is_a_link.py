"""Issue 42 claim 2: "Git configs are judged with everything git would read"; docs/shell_exec.md "One protected
list": ``config`` of a git dir is what git runs or follows; a ``core.hooksPath`` in the repository's config is
protected like ``.git/hooks/``; "a link both as named and where it leads" for includes.

Setup (a dotfiles-managed repository): ``.git/config`` is a symlink to ``repo.gitconfig`` in the work tree (git reads
its config through the link: ``git config`` even writes through it). That file sets ``core.hooksPath = .githooks``.
Attack: a command appends ``core.fsmonitor`` to ``repo.gitconfig`` (git runs it at the next ``git status``), or
writes ``.githooks/pre-commit``. Observed: applied without a question. Expected: refused, as for ``.git/config``.
Guessed cause: ``git_dirs._config_entries(follow=False)`` reads a repository's own config without following a link
(a link reads as no entries: no hooksPath, no includes), and nothing marks the link's target as the repository's
config; the judge only protects the name ``.git/config`` itself."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

POLICY = load_policy()
pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")

FSM = "[core]\n\tfsmonitor = touch fsmonitor-ran\n"  # data only: never run here
HOOK = "#!/bin/sh\ntouch hook-ran\n"


def _repo(copy: Copy) -> None:
    root = copy.root
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    config = root / ".git" / "config"
    (root / "repo.gitconfig").write_text(config.read_text() + "[core]\n\thooksPath = .githooks\n")
    config.unlink()
    os.symlink("../repo.gitconfig", config)
    (root / ".githooks").mkdir()
    (root / "fsm.txt").write_text(FSM)
    (root / "hook.txt").write_text(HOOK)
    got = subprocess.run(["git", "-C", str(root), "config", "core.hooksPath"], capture_output=True, text=True)
    assert got.stdout.strip() == ".githooks"  # git reads its config through the link


def _refused(copy: Copy, script: str) -> set[str]:
    j = judge([copy.run(script)], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    return {p for (_r, p) in j.refused}


def test_fsmonitor_added_to_the_config_git_reads_through_a_link(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _repo(copy)
    assert "repo.gitconfig" in _refused(copy, "cat fsm.txt >> repo.gitconfig")


def test_hook_written_in_the_hooks_path_of_a_linked_config(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _repo(copy)
    assert ".githooks/pre-commit" in _refused(copy, "cp hook.txt .githooks/pre-commit && chmod +x .githooks/pre-commit")


@pytest.mark.anyio
async def test_file_write_rewrites_the_config_git_reads_through_a_link(workspace: Path) -> None:
    from support import error_of, serve

    class _C:
        root = workspace

    _repo(_C())  # type: ignore[arg-type]
    async with serve("mcp-server-file-write", workspace) as client:
        wrote = await client.call_tool("file_write", {"path": "repo.gitconfig", "content": FSM, "overwrite": True})
    assert wrote.is_error and error_of(wrote)["code"] == "PROTECTED_PATH", wrote
    assert "fsmonitor" not in (workspace / "repo.gitconfig").read_text()
