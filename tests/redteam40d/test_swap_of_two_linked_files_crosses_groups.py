"""Fidelity (issue 40): two files with two names each and different bytes (``h1``/``h2`` and ``sp/x1``/``d/x2``)
swap one name each through a temporary name. Natively ``sp/x1`` becomes a name of the ``h1``/``h2`` file and ``h1``
a name of the ``d/x2`` file. Through shell_exec ``sp/x1`` lands in the wrong group (with ``d/x2`` and ``h1``) and
its bytes differ; ``h2`` is left alone. Not the accepted crossing of identical files: the bytes differ. The
smallest form needs no swap and no directory: ``mv a1 t && mv b1 a1``."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.differential import differentials, failed

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


def project(root: Path) -> None:
    (root / "d").mkdir()
    (root / "sp").mkdir()
    (root / "h1").write_text("linked\n")
    os.link(root / "h1", root / "h2")
    (root / "sp" / "x1").write_text("span\n")
    os.link(root / "sp" / "x1", root / "d" / "x2")
    (root / "a1").write_text("aaa\n")
    os.link(root / "a1", root / "a2")
    (root / "b1").write_text("bb\n")
    os.link(root / "b1", root / "b2")


SWAPS = [
    # the smallest: a name moved away, a name of another linked file renamed into its place (natively t stays with
    # a2 and a1 joins b2; boxed t lands in the a1/b2 group with b's bytes and a2 alone)
    "mv a1 t && mv b1 a1",
    "mv sp/x1 sp/t && mv h1 sp/x1 && mv sp/t h1",
    "mv sp/x1 t && mv h1 sp/x1 && mv t h1",
]


async def test_swap_of_two_linked_files_crosses_groups(workspace: Path) -> None:
    """Every command through one server (each in copies of its own): each failing one is named."""
    cases = await differentials(workspace, project, SWAPS)
    assert not (problems := failed(cases, lambda case: case.found)), problems
