"""Red team 60 F5: an undo killed while it swaps a symlink (or a FIFO, a socket) the call left for the file it
replaced, with the history on another file system. The step keeps what is there by copy (``history.keep(...,
move=False)``: a new inode in the history), then copies the pre-image back over it (``take``). Killed between the
two (fault points "history copied <entry>" and "take <entry>"), the next start replays the step:
``revert._swapped_before`` compares the inode at the path with the kept entry's — for anything but a regular file
``kept_group`` gives (), so the *copy's* inode is used, which never equals the original's: the step is taken for
"put back before the crash" and recorded as done. The call is marked undone, yet the path still holds the call's
symlink / FIFO, and the pre-image stays in the history. (Native: the symlink is linked into the history, the same
inode, and the walk passes.) The shapes are data (rt60_swap.json): plain file operations on a temporary copy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.crashwalk import crash_walk
from support.elsewhere import history_elsewhere

walk = crash_walk("crash_walk_rt60_swap")
SHAPES = json.loads((Path(__file__).parent / "rt60_swap.json").read_text())
walk.SHAPES.update(SHAPES)
pytestmark = walk.pytestmark


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_an_undo_swapping_a_symlink_back_killed_at_any_step_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    history_elsewhere(monkeypatch, tmp_path)
    walk.test_an_undo_killed_at_any_step_is_finished_or_gone_back_whole(tmp_path, shape)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_same_native(tmp_path: Path, shape: str) -> None:
    walk.test_an_undo_killed_at_any_step_is_finished_or_gone_back_whole(tmp_path, shape)
