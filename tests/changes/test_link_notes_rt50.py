"""Red team 50 F1: a name of a file with several names removed and made again as a new file lands as a file of its
own, as natively — also when the call had asked for a link to that name that failed (``ln h2 h1`` over an existing
``h1``: EEXIST), had linked it and removed it again before making it anew, or linked a new file with two names there.
The box noted the name at the link, before the kernel ran it, and every noted name was taken for the shared file
rewritten in place. Now the rename helper makes the link itself, notes only one it made, says only a name that still
holds that file, with its source; the server takes it for the real file only where the source is a name of it.
Data: rt50_link_notes.json (the commands). Controls: a plain remake, another name linked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support.differential import Case, differentials, failed, three_names

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]
DATA = json.loads((Path(__file__).parent / "rt50_link_notes.json").read_text())


def _check(case: Case) -> list[str]:
    return case.found


async def test_a_name_made_again_after_a_failed_or_undone_link_is_a_file_of_its_own(workspace: Path) -> None:
    cases = await differentials(workspace, three_names, DATA["remade"])
    assert not (problems := failed(cases, _check)), problems
