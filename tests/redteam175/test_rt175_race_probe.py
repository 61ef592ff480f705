"""Probe: shell_exec and file_write (two sessions) racing on one file. Nothing is lost, both told truthfully."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from support import serve
from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


async def test_shell_and_file_write_race_on_one_file(workspace: Path) -> None:
    (workspace / "f.txt").write_text("user\n")
    told: dict[str, Any] = {}

    async def sh() -> None:
        async with shell(workspace, Person(False)) as client:
            told["shell"] = await run(client, "sleep 3 && echo shell >> f.txt", cwd=str(workspace))

    async def fw() -> None:
        await anyio.sleep(1.5)
        async with serve("mcp-server-file-write", workspace, elicitation_callback=Person(False)) as client:
            with anyio.fail_after(60):
                result = await client.call_tool("file_write", {"path": "f.txt", "content": "fw\n", "overwrite": True})
        told["fw"] = (result.is_error, result.structured_content)

    async with anyio.create_task_group() as tg:
        tg.start_soon(sh)
        tg.start_soon(fw)
    names = sorted(p.name for p in workspace.iterdir())
    texts = {n: (workspace / n).read_text() for n in names if (workspace / n).is_file()}
    (workspace.parent / "probe.out").write_text(repr((told, texts)))
    from support.redteam import mcp_guard

    u1 = mcp_guard("undo", told["shell"]["auditId"])
    after1 = {p.name: p.read_text() for p in workspace.iterdir() if p.is_file()}
    u2 = mcp_guard("undo", str(dict(told["fw"][1])["auditId"]))
    after2 = {p.name: p.read_text() for p in workspace.iterdir() if p.is_file()}
    (workspace.parent / "probe2.out").write_text(
        repr((u1.returncode, u1.stdout, u1.stderr, after1, u2.returncode, u2.stdout, u2.stderr, after2))
    )
    assert any("fw" in t for t in texts.values()), (told, texts)
    assert any("shell" in t for t in texts.values()) or told["shell"].get("transaction") != "applied", (told, texts)
