"""Red team 53 probes: the box's rename helper and /proc/1 (the call's init). Data: rt53.json."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support.boxed import probed
from support.differential import three_names

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]
DATA = json.loads((Path(__file__).parent / "rt53.json").read_text())


async def test_the_rename_helper_does_not_look_through_the_inits_own_proc_entries(workspace: Path) -> None:
    """F3: /proc/1 is the call's init; the rename helper (a thread of it) resolves /proc/1/root, /proc/1/fd/N in its
    own process, where the command gets EACCES. rename(X, X) of a path the command cannot reach answers 0 where it
    exists (the helper's stat, "same file": nothing to do) and EACCES (the kernel's) where not: an oracle into the
    init's mount view (below the call's masks and copy), and the helper's renames, links and tree copies act there
    within the command's Landlock domain."""
    found = await probed(workspace, three_names, DATA["probe_program"])
    assert found["kernel_stat_real"] == "Permission denied", found
    assert found["exists_real_o"] == found["exists_real_missing"], found
