"""The index's cache tree, as git writes it, checks out against the index's entries (no false question on everyday
git work: commits, adds, intent-to-add entries, executables, links, gitlinks, names git sorts as directories); a
cache tree naming another tree is caught (red team 110 F1)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from mcp_server_guard.changes.git_cache_tree import cache_tree_lies
from support.hooked import git, git_out

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is missing")


def _project(root: Path) -> None:
    git(root, "init", "-q", "-b", "main")
    for rel, text in {
        "a.txt": "a\n",
        "a-b/x.txt": "x\n",
        "a/y.txt": "y\n",
        "a/b/c/z.txt": "z\n",
        "s p/q r": "q\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    os.symlink("a.txt", root / "link")
    git(root, "add", "-A")
    git(root, "commit", "-q", "--no-verify", "-m", "init")


def _lies(root: Path) -> list[str]:
    return cache_tree_lies((root / ".git" / "index").read_bytes())


def test_a_cache_tree_git_wrote_after_a_commit_tells_no_lie(tmp_path: Path) -> None:
    _project(tmp_path)
    git(tmp_path, "read-tree", "HEAD")  # (a cache tree valid for every directory)
    assert b"TREE" in (tmp_path / ".git/index").read_bytes()
    assert _lies(tmp_path) == []


def test_a_cache_tree_after_adds_and_intent_to_add_tells_no_lie(tmp_path: Path) -> None:
    _project(tmp_path)
    (tmp_path / "a/b/new.txt").write_text("new\n")
    (tmp_path / "later.txt").write_text("later\n")
    git(tmp_path, "add", "a/b/new.txt")
    git(tmp_path, "add", "-N", "later.txt")
    git(tmp_path, "write-tree")  # (fills the cache tree again, the intent-to-add entry left out)
    assert _lies(tmp_path) == []


def test_a_cache_tree_with_a_submodule_entry_tells_no_lie(tmp_path: Path) -> None:
    _project(tmp_path)
    commit = git_out(tmp_path, "rev-parse", "HEAD").strip()
    git(tmp_path, "update-index", "--add", "--cacheinfo", f"160000,{commit},vendor/lib")
    git(tmp_path, "write-tree")
    assert _lies(tmp_path) == []


def test_a_forged_cache_tree_is_caught(tmp_path: Path) -> None:
    _project(tmp_path)
    git(tmp_path, "read-tree", "HEAD")
    other = git_out(tmp_path, "rev-parse", "HEAD:a").strip()  # a real tree, not the top's
    index = bytearray((tmp_path / ".git/index").read_bytes())
    at = index.index(b"TREE") + 8
    top = index.index(b"\n", at) + 1  # the top's line, then its tree id
    index[top : top + 20] = bytes.fromhex(other)
    assert _lies_of(bytes(index)) == [""]


def _lies_of(data: bytes) -> list[str]:
    return cache_tree_lies(data)
