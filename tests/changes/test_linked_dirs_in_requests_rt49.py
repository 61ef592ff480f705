"""Red team 49 F2 (availability): the directories that hold files with several names travel to the call's init
inside the call request (``wire.CallRequest.linked``), uncapped in bytes. A command that leaves a few hundred such
directories with long names of bytes that are not UTF-8 (each byte a six-character JSON escape) makes every later
call's request larger than the box's frame limit (8 MiB): every later shell_exec call on the project fails. Data:
rt49_linked_dirs_frame.json. Each call now carries at most ``changes.linked_dirs.MAX_BYTES`` of those paths."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from support.boxed import program, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]
DATA = json.loads((Path(__file__).parent / "rt49_linked_dirs_frame.json").read_text())


async def _call(client: Any, command: str, cwd: Path) -> tuple[bool, str]:
    with anyio.fail_after(240):
        result = await client.call_tool("shell_exec", {"command": command, "timeoutSeconds": 120, "cwd": str(cwd)})
    text = json.dumps(result.structured_content) if result.structured_content else str(result.content)[:1500]
    return (not result.is_error), text[:1500]


async def test_linked_directories_with_long_odd_names_do_not_break_later_calls(workspace: Path) -> None:
    root = workspace / "p"
    root.mkdir()
    (root / "README").write_text("project\n")
    program(root, "maker", DATA["maker"])
    async with shell(workspace) as client:
        ok, text = await _call(client, DATA["make"], root)
        assert ok and '"applied"' in text, text
    async with shell(workspace) as client:  # a server whose first call searches the tree those left
        outcomes = [await _call(client, DATA["next"], root) for _ in range(3)]
    failed = [text for ok, text in outcomes if not ok]
    assert not failed, f"{len(failed)} of {len(outcomes)} later calls failed; first: " + failed[0].replace(chr(10), " ")
