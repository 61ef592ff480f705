"""Fidelity: ``mv d d2`` where ``d`` holds a file its owner cannot read (mode 000: a key file locked away, a test
fixture) or a directory its owner cannot list (0311) succeeds natively: a rename reads nothing. On the copy the in-
box rename helper copies the tree (docs/shell_exec.md "Directory renames": "moved the way mv moves across file
systems") and opening or listing the entry fails: ``mv: cannot move 'd' to 'd2': Permission denied``, and nothing
moves. The only documented limit of such a move is ``RENAME_EXCHANGE``. It once failed so; the helper now gives the
owner the rights the copy and the removal need (and puts the copy's modes back as the original had them)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from support.differential import differential

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


def _unreadable_file(root: Path) -> None:
    (root / "d").mkdir()
    (root / "d" / "ok").write_text("ok\n")
    (root / "d" / "locked").write_text("s\n")
    (root / "d" / "locked").chmod(0o000)


def _unlistable_dir(root: Path) -> None:
    (root / "d" / "inner").mkdir(parents=True)
    (root / "d" / "inner" / "f").write_text("f\n")
    (root / "d" / "inner").chmod(0o311)


@pytest.mark.parametrize("setup", [_unreadable_file, _unlistable_dir], ids=["mode-000-file", "mode-0311-dir"])
async def test_mv_of_a_directory_with_unreadable_entries(workspace: Path, setup: Callable[[Path], None]) -> None:
    found, _ = await differential(workspace, setup, "mv d d2")
    assert not found, "\n".join(found)
