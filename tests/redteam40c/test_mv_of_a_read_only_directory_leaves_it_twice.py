"""Fidelity: ``mv ro ro2`` of a project directory with mode 0555 (read-only: a Go module cache, a vendored tree
unpacked read-only) renames it natively (a rename within one parent needs no write permission on the directory
itself). On the copy the in-box rename helper moves it "the way mv moves across file systems (copied beside its
target, renamed into place, the original removed)" (docs/shell_exec.md "Directory renames"), and the removal of the
original fails with EACCES (its entries cannot be unlinked from a 0555 directory) after the copy was renamed into
place: ``mv`` reports "Permission denied" and both ``ro`` and ``ro2`` land. The only documented limit of such a move
is ``RENAME_EXCHANGE``. It once failed so; the helper now gives the owner the rights the copy and the removal need
(and puts the copy's modes back as the original had them)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.differential import differential

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


def _project(root: Path) -> None:
    (root / "ro").mkdir()
    (root / "ro" / "f").write_text("f\n")
    (root / "ro").chmod(0o555)


async def test_mv_of_a_read_only_directory(workspace: Path) -> None:
    found, _ = await differential(workspace, _project, "mv ro ro2")
    assert not found, "\n".join(found)
