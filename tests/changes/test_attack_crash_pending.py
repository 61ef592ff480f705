"""``upper._Reader.names_elsewhere``: ``[...] or [self.landed[ino]] * (ino in self.landed)`` evaluates
``self.landed[ino]`` BEFORE the multiplication, so a file moved into a directory the command made, whose every
other name the command deleted (``mkdir d; mv h1 d/; rm h2`` with h1, h2 one inode), raises KeyError while the
change set is read. ``Transactions.settle`` catches only OSError/RecursionError/ValueError.

FAILS when the call gets no ordinary answer, or the server stops answering afterwards."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import anyio
import pytest

from mcp_server_guard.paths import state_dir
from support import serve
from support.boxed import SX, Person, program

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


async def test_moving_one_name_into_a_new_directory_and_deleting_the_other_gets_an_answer(workspace: Path) -> None:
    (workspace / "h1").write_text("one inode, two names\n")
    os.link(workspace / "h1", workspace / "h2")
    code = program(
        workspace,
        "mv",
        """
os.mkdir("d")
os.rename("h1", "d/h1")
os.unlink("h2")
""",
    )
    async with serve(SX, workspace, elicitation_callback=Person()) as client:
        with anyio.fail_after(90):
            result = await client.call_tool("shell_exec", {"command": code, "timeoutSeconds": 60})
        out = dict(result.structured_content or {})
        with anyio.fail_after(60):
            after = await client.call_tool("shell_exec", {"command": "echo alive", "timeoutSeconds": 30})
        copies = state_dir() / "copies"
        left = [str(p.relative_to(copies)) for p in copies.glob("*/*/u0/d/h1")] if copies.exists() else []
    assert not result.is_error and out.get("transaction") == "applied", (
        f"the call's answer: {result.content}; its copy, never removed while the server runs: {left}"
    )
    assert not after.is_error and "alive" in str(after.structured_content), after
    assert (workspace / "d" / "h1").read_text() == "one inode, two names\n"
