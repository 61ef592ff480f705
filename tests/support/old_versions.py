"""A repository whose previous commit holds the only copy of an old version of ``a.txt`` (red teams 102, 103: packs
that make history unreadable to git), and whether git still reads that version."""

from __future__ import annotations

import subprocess
from pathlib import Path

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
OLD = b"the old version of a.txt, only in history\n"


def two_versions(root: Path) -> None:
    """``root``: a new repository of two commits, ``a.txt`` at OLD in the first only (``.t/`` excluded)."""
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=60)
    (root / ".git" / "info" / "exclude").write_text(".t/\n")
    (root / "a.txt").write_bytes(OLD)
    subprocess.run([*GIT, "add", "a.txt"], cwd=root, check=True, timeout=60)
    subprocess.run([*GIT, "commit", "-qm", "v1"], cwd=root, check=True, timeout=60)
    (root / "a.txt").write_text("a\n")
    subprocess.run([*GIT, "commit", "-qam", "v2"], cwd=root, check=True, timeout=60)


def git_has_old(root: Path) -> bool:
    """Whether git still reads the old version (it loops on a delta on itself: bounded)."""
    try:
        shown = subprocess.run(["git", "show", "HEAD~1:a.txt"], cwd=root, capture_output=True, timeout=10)
    except subprocess.TimeoutExpired:
        return False
    return shown.returncode == 0 and shown.stdout == OLD
