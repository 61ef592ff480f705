"""Red team 101 E: 21b285d answered red team 100 F5 ("more than LOG_KEEP notes writes during one judgement make it
anything") by merging older takings into runs instead of forgetting them. But ``treelock._log`` always merges the two
OLDEST runs (``entries[0:2]``). The oldest run therefore absorbs every taking that falls off the end, for the whole
life of the lock file.

Once it is "anything" it stays "anything". That happens after any one taking that said nothing (an undo, a
times-only apply, a recovery, a build of more than 256 paths) or after more than 256 distinct paths written in all
since the lock file was made. From then on it creeps forward one taking per new taking. A judgement that sees more
than LOG_KEEP (16) other takings is then "anything" again, even when every one of them wrote only ``notes.md``: F5
comes back with 16 instead of 32, on any tree lock that has lived more than a few minutes. The judgement runs again
(three rounds), then under the lock, and the notes writer meets FILE_BUSY on a long one.

Plain ``treelock`` calls in the test's own registry (conftest: MCP_GUARD_RUNTIME_DIR)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mcp_server_guard.files.treelock import LOG_KEEP, Wrote, generations, tree_lock


def _take(device: list[int], wrote: Callable[[], Wrote]) -> None:
    with tree_lock(device, wrote=wrote):
        pass


@pytest.mark.parametrize("long_ago", ["nothing (control)", "one undo", "one build of 300 files"])
def test_attack_notes_writes_during_a_judgement_make_it_anything_once_the_oldest_run_is(
    tmp_path: Path, long_ago: str
) -> None:
    device = [tmp_path.stat().st_dev]
    notes = str(tmp_path / "notes.md")
    if long_ago == "one undo":
        _take(device, lambda: None)  # (an undo, a recovery or a times-only apply says nothing)
    elif long_ago == "one build of 300 files":
        build = [str(tmp_path / "build" / f"o{n}.o") for n in range(300)]
        _take(device, lambda: build[:150])
        _take(device, lambda: build[150:])  # (merged with the first: more than LOG_PATHS, "anything")
    for _ in range(2 * LOG_KEEP):  # an hour of notes writes before the judgement
        _take(device, lambda: [notes])
    seen = generations(device)
    assert seen is not None
    for _ in range(LOG_KEEP + 4):  # 20 notes writes while a long build is judged
        _take(device, lambda: [notes])
    with tree_lock(device, since=seen, unrelated=lambda written: written == frozenset({notes})) as changed:
        assert not changed, f"{long_ago}: the judgement is stale after {LOG_KEEP + 4} writes of notes.md alone"
