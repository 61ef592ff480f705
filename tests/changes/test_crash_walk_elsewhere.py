"""The crash walk (``test_crash_walk``: an apply and an undo killed at every fault point, then the next start) with
the history on another file system than the project (as where the state directory and the project lie on two):
every pre-image is copied into the history, a file or tree being deleted is set aside first (``kept._keep_aside``)
and an undo copies each pre-image back. More shapes than the walk's own (red teams 57, 58): files with several names in
and out of a deleted tree, a tree replaced by a file and back, a big file deleted. The shapes' lines are plain file
operations on a temporary copy."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.crashwalk import crash_walk
from support.elsewhere import history_elsewhere

walk = crash_walk("crash_walk_elsewhere")
walk.SHAPES.update(
    {
        "tree-to-file": "rm -r tree; echo f > tree",
        "file-to-tree": "rm edit.txt; mkdir edit.txt; echo x > edit.txt/in",
        "delete-outside-name-and-tree": "rm keep.txt; rm -r tree",
        "delete-tree-then-outside-name": "rm -r tree/sub; rm keep.txt",
        "delete-big": "rm big.bin",
        "sub-to-link-of-outside": "rm -r tree/sub; ln keep.txt tree/sub",
        # red team 58
        "tree-to-symlink": "rm -r tree; ln -s edit.txt tree",
        "linked-file-to-dir": "rm keep.txt; mkdir keep.txt; echo d > keep.txt/in",
        "new-outside-name-then-delete-tree": "ln tree/sub/a0.txt a0-out; rm -r tree",
        "move-linked-out-then-delete-tree": "mv tree/b.txt b-out; rm -r tree",
        "tree-replaced-by-tree": "rm -r tree; mkdir -p tree/sub; echo new > tree/sub/n.txt",
        "delete-tree-and-big": "rm -r tree; rm big.bin; rm edit.txt",
        "big-to-tree": "rm big.bin; mkdir big.bin; echo x > big.bin/in",
        "delete-both-names-outside": "rm tree/sub/keep-link.txt; rm keep.txt; rm -r tree/sub",
        "fifo-in-deleted-tree": "mkfifo tree/sub/p; rm -r tree",
        "dir-to-file-nested": "rm -r tree/sub; echo s > tree/sub; rm tree/b-link.txt",
        # red team 61 (a copy put back takes the inode number of the tree just removed: test_rt61_undo_killed_trade)
        "file-and-dir-trade-names": "mv tree t; mv edit.txt tree; mv t edit.txt",
    }
)

pytestmark = walk.pytestmark

APPLY = sorted(set(walk.SHAPES) - {"create-many", "one-large-file"})
# (Every shape: since a tree put back keeps its entry's links until the undo ends, an undo killed after it put back
# one name of a file whose every name the call deleted makes the later names names of that copy again.)
UNDO = APPLY


@pytest.mark.parametrize("shape", APPLY)
def test_an_apply_killed_at_any_step_with_the_history_on_another_fs_is_finished_whole_and_undoes_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    history_elsewhere(monkeypatch, tmp_path)
    walk.test_an_apply_killed_at_any_step_is_finished_whole_and_undoes_exactly(tmp_path, shape)


@pytest.mark.parametrize("shape", UNDO)
def test_an_undo_killed_at_any_step_with_the_history_on_another_fs_is_finished_or_gone_back_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    history_elsewhere(monkeypatch, tmp_path)
    walk.test_an_undo_killed_at_any_step_is_finished_or_gone_back_whole(tmp_path, shape)
