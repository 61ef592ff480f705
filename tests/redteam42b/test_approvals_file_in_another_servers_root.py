"""The approvals file is state like the history (issue 42: "every registered state directory (copies, history,
audit, approvals) is hidden from every server's tools and commands"; "the state directory is refused when it lies
inside a root ... of another RUNNING server"). A server whose ``--approvals-file`` lies inside a directory another
running server allows must refuse to start (that server's commands could grant themselves anything at the next
start: docs/shell_exec.md "Session approvals"); and one started first must have that file hidden from the other's
tools."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import anyio
import pytest

from support import console_script, serve

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

SX, FR, FW = "mcp-server-shell-exec", "mcp-server-file-read", "mcp-server-file-write"


async def _call(client: object, tool: str, arguments: dict[str, object]) -> tuple[bool, str]:
    with anyio.fail_after(90):
        result = await client.call_tool(tool, arguments)  # type: ignore[attr-defined]
    return bool(result.is_error), " ".join(getattr(c, "text", "") for c in result.content)


async def test_approvals_file_inside_a_running_servers_root_is_refused_at_start(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    approvals = big / "approvals.json"
    env_a = {"XDG_STATE_HOME": str(tmp_path / "state-a")}
    writer = ("--history-dir", str(tmp_path / "state-a" / "history"))  # a server that can write there
    async with serve(FW, big, *writer, audit=tmp_path / "state-a" / "audit.jsonl", env=env_a) as a:
        await _call(a, "file_write", {"path": "w.txt", "content": "w\n"})
        started = subprocess.run(
            [console_script(SX), "--audit-log", str(tmp_path / "state-b" / "audit.jsonl"),
             "--approvals-file", str(approvals)],
            cwd=project, input=b"", capture_output=True, timeout=60, check=False,
            env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "state-b")},
        )  # fmt: skip
    assert started.returncode == 2, (started.returncode, started.stderr[-2000:])


async def test_approvals_file_of_a_running_server_is_hidden_from_another_servers_file_read(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    approvals_dir = big / "b-state"
    approvals_dir.mkdir()
    approvals = approvals_dir / "approvals.json"
    env_b = {"XDG_STATE_HOME": str(tmp_path / "state-b")}
    async with serve(SX, project, "--approvals-file", str(approvals), audit=tmp_path / "state-b" / "audit.jsonl",
                     env=env_b) as b:  # fmt: skip
        await _call(b, "shell_exec", {"command": "echo hi", "timeoutSeconds": 60})
        if not approvals.exists():  # made at B's first grant; its content does not matter to the attack
            approvals.write_text('{"version": 1, "grants": []}\n')
        env_a = {"XDG_STATE_HOME": str(tmp_path / "state-a")}
        async with serve(FR, big, audit=tmp_path / "state-a" / "audit.jsonl", env=env_a) as a:
            failed, text = await _call(a, "file_read", {"path": "b-state/approvals.json"})
    assert failed, f"another server's approvals file was served: {text[:500]}"
