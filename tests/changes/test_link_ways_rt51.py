"""Red team 51 F6: a name of a file with several names removed and linked again to that file in ways other than a
plain ``link(name, name)`` (through /proc/self/fd, through a symlink with -L, from another directory through a
temporary name then renamed, a chain): natively it stays a name of the file; a write through another name reaches
it. A name the call linked and then renamed now says it came from the file it was linked to. Data:
rt51_links.json."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support.differential import Case, differentials, failed, three_names

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]
DATA = json.loads((Path(__file__).parent / "rt51_links.json").read_text())


def _check(case: Case) -> list[str]:
    return case.found


async def test_names_linked_again_in_other_ways_stay_one_file(workspace: Path) -> None:
    cases = await differentials(workspace, three_names, DATA["relinked"])
    assert not (problems := failed(cases, _check)), problems
