"""A shell_exec server keeps its copies in ``<root>/.mcp-guard/copies`` when its state directory lies inside its
root or on another file system (docs/shell_exec.md "Commands work on a copy"; changes/area.py). Issue 42: "every
registered state directory (copies, history, audit, approvals) is hidden from every server's tools and commands",
and a state directory inside another RUNNING server's root is refused. Here server A allows ``big/``, and server B
(shell_exec) serves ``big/proj`` with its XDG_STATE_HOME inside its own root, so B's copies live in
``big/proj/.mcp-guard/copies``, inside A's root: B should refuse to start, or A's tools should not reach B's copies.
Observed: B starts and A's file_write plants a file in B's live copies area."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest

from support import serve
from support.boxed import Person

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

SX, FW = "mcp-server-shell-exec", "mcp-server-file-write"


async def test_outer_servers_file_write_reaches_a_nested_servers_copies(tmp_path: Path) -> None:
    big = tmp_path / "big"
    proj = big / "proj"
    proj.mkdir(parents=True)
    (proj / "notes.txt").write_text("notes\n")
    env_a = {"XDG_STATE_HOME": str(tmp_path / "state-a")}
    env_b = {"XDG_STATE_HOME": str(proj / ".st"), "TMPDIR": str(tmp_path / "tmp-b")}
    (tmp_path / "tmp-b").mkdir()
    async with serve(FW, big, audit=tmp_path / "state-a" / "audit.jsonl", env=env_a) as a:
        with anyio.fail_after(60):
            await a.call_tool("file_write", {"path": "warmup.txt", "content": "x\n"})
        try:
            async with serve(SX, proj, audit=tmp_path / "state-b" / "audit.jsonl", env=env_b,
                             elicitation_callback=Person()) as b:  # fmt: skip
                with anyio.fail_after(90):
                    await b.call_tool("shell_exec", {"command": "echo b > made.txt", "timeoutSeconds": 60})
                copies = proj / ".mcp-guard" / "copies"
                parts = [p for p in copies.iterdir() if p.is_dir()] if copies.is_dir() else []
                assert parts, "B keeps no copies in its root (the premise does not hold here)"
                rel = (parts[0] / "planted.txt").relative_to(big)
                with anyio.fail_after(60):
                    result = await a.call_tool("file_write", {"path": str(rel), "content": "forged\n"})
                assert result.is_error, f"A wrote into B's copies area: {rel}"
        except BaseException as exc:  # B refusing to start is the other acceptable outcome
            if "refuse" in repr(exc) or "another running server" in repr(exc):
                return
            raise
