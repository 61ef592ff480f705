"""docs/shell_exec.md "One protected list": "A hooks directory you configured (``core.hooksPath``, in the repository's
config ...) is protected like ``.git/hooks/``: nothing in it is written by a command". Git takes a relative
core.hooksPath from the top of the work tree, and a repository's ``core.worktree`` (set by the user: a dotfiles or
site repository kept beside its files, ``git --git-dir meta.git``) says where that is.

Attack: ``meta.git`` (core.bare=false, core.worktree=../site, core.hooksPath=.hooks) with the user's
``site/.hooks/pre-commit``; a command rewrites that hook; the user's next ``git --git-dir meta.git commit`` runs it
(checked by hand with git 2.39: the hook runs in ``site/``). Observed: applied silently (nothing refused or asked).
Expected: refused. Guessed cause: ``git_dirs.repos_files`` expands a non-``.git`` git dir's relative hooksPath
from the git dir (``meta.git/.hooks``), never from its ``core.worktree``."""

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

HOOK = '#!/bin/sh\ntouch "$HOME/hook-ran"\n'


def _git(*args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True, capture_output=True)


def test_attack_rewrite_hook_in_the_core_worktree_of_a_repository(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    meta, site = copy.root / "meta.git", copy.root / "site"
    site.mkdir()
    _git("init", "-q", "--bare", str(meta))
    for key, value in (("core.bare", "false"), ("core.worktree", "../site"), ("core.hooksPath", ".hooks")):
        _git("--git-dir", str(meta), "config", key, value)
    (site / ".hooks").mkdir()
    (site / ".hooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (site / ".hooks" / "pre-commit").chmod(0o755)
    (copy.root / "hook.txt").write_text(HOOK)
    j = judge([copy.run("cat hook.txt > site/.hooks/pre-commit")], protection_for(POLICY), POLICY.effects,
              [str(copy.root)])  # fmt: skip
    refused = {p for (_r, p) in j.refused}
    assert "site/.hooks/pre-commit" in refused, (refused, j.asks)
