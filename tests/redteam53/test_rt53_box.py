"""Red team 53 through the real server: files with several names followed by the call's init (shell.sandbox.unlinks,
renames._linking/_moved, changes.upper._linked_elsewhere). Data: rt53.json (commands and programs only as data)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support.differential import differentials, failed, two_groups

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]
DATA = json.loads((Path(__file__).parent / "rt53.json").read_text())


def _project(root: Path) -> None:
    """two_groups, with the programs the commands run (link, rename, exchange)."""
    two_groups(root, {name: DATA[f"{name}_program"] for name in ("link", "rename", "exchange")})


async def test_paths_with_a_trailing_slash_fail_as_natively(workspace: Path) -> None:
    cases = await differentials(workspace, _project, DATA["slash_cases"])
    assert not (problems := failed(cases, lambda case: case.found)), problems


async def test_a_name_that_holds_its_own_file_again_after_a_link_or_rename_lands_as_that_file(workspace: Path) -> None:
    """F1: the init follows the name away and back (ln h1 d/x && rm h1 && mv d/x h1; mv h1 t && mv t h1 after a write)
    and ends with the name holding the file it began with; ``unlinks.remade`` then says nothing of it (``now == (wd,
    name)``), and the box's rename notes (or the copy-up) make the server land it as a file of its own: a write
    through another name does not reach it, or its own write does not reach the others."""
    cases = await differentials(workspace, _project, DATA["back_to_itself_cases"])
    assert not (problems := failed(cases, lambda case: case.found)), problems


async def test_other_sequences_land_as_natively(workspace: Path) -> None:
    cases = await differentials(workspace, _project, DATA["passing_cases"])
    assert not (problems := failed(cases, lambda case: case.found)), problems
