"""What a name of a file with several names holds at the end: the file itself brought back to it (``ln -f h2 h1``,
``echo z >> h2 && rm h1 && mv h2 h1``, a swap with ``RENAME_EXCHANGE``) lands as that file, and a name made again
with other names too (``rm h1 && cp b h1 && ln h1 x``) as a file of its own — as natively. The call's init follows,
in the kernel's order, what each name of the directories it watches holds (``shell.sandbox.unlinks``), told first of
each link the box's rename helper makes there. Data: names_followed.json."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support.differential import differentials, failed, three_names

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]
DATA = json.loads((Path(__file__).parent / "names_followed.json").read_text())


def _project(root: Path) -> None:
    three_names(root)
    (root / ".t").mkdir()
    (root / ".t" / "exchange.py").write_text(DATA["exchange_program"])


async def test_a_name_brought_back_to_its_file_or_made_again_lands_as_natively(workspace: Path) -> None:
    cases = await differentials(workspace, _project, DATA["cases"])
    assert not (problems := failed(cases, lambda case: case.found)), problems
