"""Red team 53 probes: the box's rename helper and /proc/1 (the call's init). Data: rt53.json."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from support.boxed import program, run, shell
from support.differential import three_names

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]
DATA = json.loads((Path(__file__).parent / "rt53.json").read_text())


def _probe(out: dict[str, Any]) -> dict[str, Any]:
    text = out.get("stdout") or ""
    assert "PROBE " in text, out
    found: dict[str, Any] = json.loads(text.split("PROBE ", 1)[1].splitlines()[0])
    return found


async def test_the_rename_helper_does_not_look_through_the_inits_own_proc_entries(workspace: Path) -> None:
    """F3: /proc/1 is the call's init; the rename helper (a thread of it) resolves /proc/1/root, /proc/1/fd/N in its
    own process, where the command gets EACCES. rename(X, X) of a path the command cannot reach answers 0 where it
    exists (the helper's stat, "same file": nothing to do) and EACCES (the kernel's) where not: an oracle into the
    init's mount view (below the call's masks and copy), and the helper's renames, links and tree copies act there
    within the command's Landlock domain."""
    root = workspace / "p"
    root.mkdir()
    three_names(root)
    cmd = program(root, "probe", DATA["probe_program"])
    async with shell(workspace) as client:
        out = await run(client, cmd, cwd=str(root))
    found = _probe(out)
    assert found["kernel_stat_real"] == "Permission denied", found
    assert found["exists_real_o"] == found["exists_real_missing"], found
