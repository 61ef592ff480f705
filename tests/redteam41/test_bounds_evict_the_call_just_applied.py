"""Bounds that should refuse, evict instead: a call whose previous contents "fit" by their byte count is applied, and
its own pre-images are evicted the moment it is done — the result offers `mcp-guard undo <id>`, the undo says
"evicted", and the old contents are gone for good.

Why: ``HistoryStore.room`` compares the pre-images' *sizes* with ``history_max_bytes``, but the store measures what
it *uses on disk* (allocated blocks of every data file, plus each entry's metadata file, plus the call record).
Fifteen 11-byte files are 165 bytes by size but ~120 KiB on disk; with ``history_max_bytes = 65536`` the apply is
let through, then ``running()``'s exit calls ``_evict``, the call is no longer "running", it is the oldest (only)
call, and it goes whole. The docs promise "a change set whose previous contents alone exceed the history's bounds
is not applied" and "a call never evicts its own pre-images".

To pass: count what a call's pre-images will *use* (blocks, metadata, the record: at least ``_SLACK``-style
overheads per entry) in ``room`` — refusing the call before any change — or never evict the call that has just
finished (it is the newest, so "oldest first" must stop before it)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.redteam import SX, call, mcp_guard, started


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
def test_shell_exec_rewrite_of_small_files_is_applied_then_its_own_preimages_evicted(
    workspace: Path, tmp_path: Path
) -> None:
    root, state = workspace, tmp_path / "state"
    for i in range(15):
        (root / f"f{i}.txt").write_text(f"precious {i}\n")
    policy = tmp_path / "p.toml"
    policy.write_text("[file_write]\nhistory_max_bytes = 65536\n", encoding="utf-8")
    raw = started(SX, root, state, "--policy", str(policy))
    try:
        result = call(raw, 2, "shell_exec", {"command": "for f in f*.txt; do echo new > $f; done",
                                             "timeoutSeconds": 30})  # fmt: skip
    finally:
        raw.close()
    structured = result["structuredContent"]
    if structured["transaction"] != "applied":
        return  # refused before any change: what the bounds promise
    undo = structured["changes"]["undo"]
    assert undo.startswith("mcp-guard undo "), structured
    done = mcp_guard("undo", undo.split()[-1], "--history-dir", str(state / "history"),
                     "--audit-log", str(state / "audit.jsonl"))  # fmt: skip
    assert done.returncode == 0, (
        f"the call was applied and offered `{undo}`, but its own pre-images were evicted at once: {done.stderr}"
    )
    assert sorted((root / f"f{i}.txt").read_text() for i in range(15)) == sorted(f"precious {i}\n" for i in range(15))
