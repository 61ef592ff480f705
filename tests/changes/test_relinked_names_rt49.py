"""Red team 49 F1: a name the command removed and then made a name of the same file again, its other name then
removed, holds on the copy a regular file with one name: the init said it was made again (``shell.sandbox.unlinks``)
and the server landed it as a file of its own. Natively it is still a name of the file: the other names get the later
write and stay hard links of it. The box now notes the names a call links to a file with several names
(``renames.linked``).
Data: rt49_relinked_names.json."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support.differential import Case, differentials, failed, three_names

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]
DATA = json.loads((Path(__file__).parent / "rt49_relinked_names.json").read_text())


def _check(case: Case) -> list[str]:
    return case.found


async def test_a_name_linked_back_to_its_file_stays_a_name_of_it(workspace: Path) -> None:
    cases = await differentials(workspace, three_names, DATA["regressions"])
    assert not (problems := failed(cases, _check)), problems
