"""shell/execution.py ``_decide`` / tools/shell_service.py ``_writable_engine``: under ``--mode read-only`` a refusal
says READ_ONLY_MODE ("restart with --mode workspace-write") only when a workspace-write session of the same server
would run the line. What must hold: whenever the same server started with --mode workspace-write (same other flags)
refuses the line, the read-only refusal is not told as a matter of the mode.

Lines travel only as JSON to servers that refuse them; nothing harmful runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from support import error_of, serve

pytestmark = pytest.mark.anyio
SX = "mcp-server-shell-exec"


async def _error(workspace: Path, command: str, *args: str) -> dict[str, Any]:
    async with serve(SX, workspace, *args) as client:
        result = await client.call_tool("shell_exec", {"command": command, "timeoutSeconds": 30})
    assert result.is_error, result
    return error_of(result)


async def test_read_only_with_transactions_off_tells_rm_rf_as_the_mode(workspace: Path) -> None:
    """``--mode read-only --transactions off``: ``rm -rf build`` is refused. The same server in workspace-write
    (--transactions off: commands write files directly, no copy) refuses it too (rule rm-recursive-force,
    COMMAND_DENIED). Expected: COMMAND_DENIED in read-only. Observed: READ_ONLY_MODE ("restart with --mode
    workspace-write"): ``_writable_engine`` judges with effects whenever the box is bubblewrap, ignoring that
    --transactions off (or a box without copies) leaves a workspace-write session with no copy."""
    (workspace / "build").mkdir()
    writable = await _error(workspace, "rm -rf build", "--transactions", "off", "--sandbox", "off")
    assert writable["code"] == "COMMAND_DENIED", writable
    refused = await _error(
        workspace, "rm -rf build", "--mode", "read-only", "--transactions", "off", "--sandbox", "off"
    )
    assert refused["code"] == "COMMAND_DENIED", refused
    # With the box the kernel keeps a read-only session from writing: the line runs, and nothing goes.
    async with serve("mcp-server-shell-exec", workspace, "--mode", "read-only", "--transactions", "off") as client:
        ran = await client.call_tool("shell_exec", {"command": "rm -rf build"})
    assert (workspace / "build").is_dir(), ran


async def test_read_only_redirect_outside_the_jail_is_told_as_the_mode(workspace: Path) -> None:
    """``echo hi > ../outside/note.txt``: a workspace-write session refuses it (REDIRECT_OUTSIDE_JAIL: the file is
    outside the allowed directories). Expected in read-only: not READ_ONLY_MODE (a restart would not make it run).
    Observed: READ_ONLY_MODE, because ``_writable_would_run`` asks only the policy engine, not the jail checks that
    follow ``_decide``."""
    line = "echo hi > ../outside/note.txt"
    writable = await _error(workspace, line)
    assert writable["code"] != "READ_ONLY_MODE", writable
    refused = await _error(workspace, line, "--mode", "read-only")
    assert refused["code"] != "READ_ONLY_MODE", refused
    assert not (workspace.parent / "outside" / "note.txt").exists()
