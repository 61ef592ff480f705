"""The crash walk (``test_crash_walk``: an apply and an undo killed at every fault point, then the next start) with
the history on another file system than the project (as where the state directory and the project lie on two):
every pre-image is copied into the history, a file or tree being deleted is set aside first (``kept._keep_aside``)
and an undo copies each pre-image back. The shapes' lines are plain file operations on a temporary copy."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.crashwalk import crash_walk
from support.elsewhere import history_elsewhere

walk = crash_walk("crash_walk_elsewhere")

pytestmark = walk.pytestmark


@pytest.mark.parametrize("shape", ["delete-a-tree", "rename-a-directory", "rewrite", "swap-linked-files"])
def test_an_apply_killed_at_any_step_with_the_history_on_another_fs_is_finished_whole_and_undoes_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    history_elsewhere(monkeypatch, tmp_path)
    walk.test_an_apply_killed_at_any_step_is_finished_whole_and_undoes_exactly(tmp_path, shape)


@pytest.mark.parametrize("shape", ["delete-a-tree", "rename-a-directory", "rewrite"])
def test_an_undo_killed_at_any_step_with_the_history_on_another_fs_is_finished_or_gone_back_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    history_elsewhere(monkeypatch, tmp_path)
    walk.test_an_undo_killed_at_any_step_is_finished_or_gone_back_whole(tmp_path, shape)
