"""``mcp-guard history`` tells each call as its result did (issue 43: a result's "create 7 files" was listed as
"1 created": a new directory counted as one tree)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from support import console_script
from support.boxed import run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


async def test_history_lists_a_call_with_the_summary_its_result_gave(workspace: Path) -> None:
    async with shell(workspace) as client:
        out = await run(client, "mkdir made && for i in 1 2 3 4 5 6 7; do echo $i > made/f$i.txt; done")
    summary = out["changes"]["summary"]
    assert out["transaction"] == "applied" and "7 files" in summary, out["changes"]
    listed = subprocess.run([console_script("mcp-guard"), "history"], capture_output=True, text=True, timeout=60,
                            check=False)  # fmt: skip
    line = next(line for line in listed.stdout.splitlines() if line.startswith(out["auditId"]))
    assert summary in line, (summary, line)
