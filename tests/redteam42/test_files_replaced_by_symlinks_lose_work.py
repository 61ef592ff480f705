"""Deleting or emptying work no one else has asks (more than 3 files no repository keeps; any untracked file in a
repository). Replacing the same files by symlinks (``ln -sf /dev/null notes.txt``) loses their bytes just the same,
yet is counted as "modify" and asks nothing: five precious files in a project without git, or an untracked file in
a repository, are gone (the undo history keeps them, but no person was asked first).

Passes when a regular file replaced by another kind (a symlink; a directory already counts) is judged as a
deletion of that file.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
POLICY = load_policy()


def asks(tmp_path: Path, script: str, *, git: bool) -> list[str]:
    copy = Copy(tmp_path)
    if git:
        subprocess.run(["git", "init", "-q", str(copy.root)], check=True, timeout=30)
    for name in "abcde":
        (copy.root / name).write_text(f"precious {name}\n")
    judged = judge([copy.run(script)], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    assert not judged.refused
    return judged.asks


def test_attack_five_unbacked_files_replaced_by_symlinks_ask_nothing(tmp_path: Path) -> None:
    asked = asks(tmp_path, "for f in a b c d e; do ln -sf /dev/null $f; done", git=False)
    assert asked, "five files no repository keeps were replaced by links, and no one was asked"


def test_attack_untracked_file_replaced_by_a_symlink_asks_nothing(tmp_path: Path) -> None:
    asked = asks(tmp_path, "ln -sf /dev/null a", git=True)
    assert any("Git has no copy" in a for a in asked), asked
