"""Issue 42, red team i, claim 7: "Every documented bound bounds". A deleted tree is kept whole in the history; its
size counted its regular files only, so ``rm -rf`` of 15,000 empty directories kept 63 MB under an 8 MiB
``history_max_bytes``, unasked, and eviction never saw it. Directories (and links) now count what they take."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.redteam import SX, call, disk_used, started

BOUND = 2 << 20


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
def test_a_deleted_tree_of_empty_directories_stays_within_history_max_bytes(workspace: Path, tmp_path: Path) -> None:
    root, state = workspace, tmp_path / "state"
    for n in range(1500):
        (root / "t" / f"d{n:04d}").mkdir(parents=True)
    policy = tmp_path / "p.toml"
    policy.write_text(f"[file_write]\nhistory_max_bytes = {BOUND}\n", encoding="utf-8")
    raw = started(SX, root, state, "--policy", str(policy))
    try:
        result = call(raw, 2, "shell_exec", {"command": "rm -rf t", "timeoutSeconds": 60}, timeout=120)
    finally:
        raw.close()
    structured = result["structuredContent"]
    used = disk_used(state / "history", dirs=True)
    if structured["transaction"] == "applied":
        assert used <= BOUND, f"history holds {used} bytes on disk, bound {BOUND}"
    else:  # refused before any change (the bound said no room): the tree is still there
        assert (root / "t" / "d0000").is_dir(), structured
