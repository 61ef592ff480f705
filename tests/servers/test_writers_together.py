"""Every writer of ours on the same files at once — file_write, shell_exec's applies, `mcp-guard undo` — through the
real servers: one lock order (the project-wide lock before any file's), so none waits out another into FILE_BUSY;
and a write undone, then its undo undone (a redo), through the real console scripts."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import anyio
import pytest

from support import console_script, error_of, serve

FW = "mcp-server-file-write"
SX = "mcp-server-shell-exec"

pytestmark = pytest.mark.anyio


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
async def test_file_writes_and_applies_on_one_file_never_fail_busy(workspace: Path, tmp_path: Path) -> None:
    (workspace / "shared.txt").write_text("0\n")
    audit = tmp_path / "audit.jsonl"
    waits: list[float] = []
    refused: list[str] = []
    async with serve(SX, workspace, audit=audit) as shell, serve(FW, workspace, audit=audit) as fw:

        async def writer(k: int) -> None:
            for i in range(6):
                started = anyio.current_time()
                with anyio.fail_after(60):
                    result = await fw.call_tool(
                        "file_write", {"path": "shared.txt", "content": f"w{k}-{i}\n", "overwrite": True}
                    )
                waits.append(anyio.current_time() - started)
                if result.is_error:
                    refused.append(str(error_of(result).get("code")))

        async def command(k: int) -> None:
            for i in range(3):
                with anyio.fail_after(90):
                    result = await shell.call_tool(
                        "shell_exec", {"command": f"echo c{k}-{i} >> shared.txt", "timeoutSeconds": 60}
                    )
                if result.is_error:
                    refused.append(str(error_of(result).get("code")))

        async with anyio.create_task_group() as tg:
            for k in range(3):
                tg.start_soon(writer, k)
            for k in range(2):
                tg.start_soon(command, k)
    assert refused == []
    # FILE_BUSY comes after a 10 s wait: no write waited anywhere near it.
    assert max(waits) < 8, sorted(waits)[-5:]


def test_a_write_undone_and_its_undo_undone_is_back_exactly(workspace: Path, tmp_path: Path) -> None:
    target = workspace / "notes.txt"
    target.write_text("first\n")
    target.chmod(0o640)
    audit, history = tmp_path / "audit.jsonl", tmp_path / "history"

    async def write() -> str:
        async with serve(FW, workspace, "--history-dir", str(history), audit=audit) as fw:
            result = await fw.call_tool("file_write", {"path": "notes.txt", "content": "second\n", "overwrite": True})
        assert not result.is_error, result
        return str((result.structured_content or {})["auditId"])

    call = anyio.run(write)
    assert target.read_text() == "second\n"
    mcp_guard = [console_script("mcp-guard"), "undo", "--history-dir", str(history), "--audit-log", str(audit)]
    undone = subprocess.run([*mcp_guard, call], capture_output=True, text=True, timeout=60)
    assert undone.returncode == 0, undone.stderr
    assert target.read_text() == "first\n" and target.stat().st_mode & 0o777 == 0o640
    undo_id = undone.stdout.split("(as call ")[1].split(";")[0]
    redone = subprocess.run([*mcp_guard, undo_id], capture_output=True, text=True, timeout=60)
    assert redone.returncode == 0, redone.stderr
    assert target.read_text() == "second\n" and target.stat().st_mode & 0o777 == 0o640
    again = subprocess.run([*mcp_guard, call], capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr  # redone: the call is in force again, and can be undone again
    assert target.read_text() == "first\n"
