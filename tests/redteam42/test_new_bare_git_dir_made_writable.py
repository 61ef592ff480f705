"""Anything of a git dir made writable by group or others is refused — for a git dir named ``.git`` (found by name)
or one the real tree already has. A git dir the command makes under another name (``git init --bare lib.git``, a
clone's ``--separate-git-dir``) is judged on the real tree only, where it does not exist yet: its ``hooks`` and the
git dir itself made 0777 are merely asked about, and a yes lands a repository any local user can plant hooks in.

Passes when the mode guard judges git dirs on the tree the command left (``Trees.is_git_dir``), as the git verdicts
already do.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
POLICY = load_policy()


def test_attack_new_bare_repository_hooks_made_world_writable_are_only_asked(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    old = os.umask(0o022)
    try:
        changes = copy.run("git init -q --bare lib.git && chmod 777 lib.git lib.git/hooks")
        judged = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    finally:
        os.umask(old)
    refused = {path for (_root, path) in judged.refused}
    assert {"lib.git", "lib.git/hooks"} <= refused, (refused, judged.asks)
