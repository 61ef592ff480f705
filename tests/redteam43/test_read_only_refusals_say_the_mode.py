"""shell/execution.py ``_decide``: under ``--mode read-only`` a refusal is told as READ_ONLY_MODE ("ask them to restart
the server with --mode workspace-write") when its rule is not one of the packaged default policy's, or is
``undoable``. What must hold (issue 43, item 3): a refusal that a real security rule makes — one that refuses the same
line in workspace-write too — is never presented as a matter of the mode; the model would tell the user to restart
the server for a line that would still be refused (or worse, get the user to widen the mode for it).

Each line travels only as JSON to the server, which refuses it: nothing runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from support import error_of, serve

pytestmark = pytest.mark.anyio
SX = "mcp-server-shell-exec"


async def _refusal(workspace: Path, command: str, *args: str) -> dict[str, Any]:
    async with serve(SX, workspace, "--mode", "read-only", *args) as client:
        result = await client.call_tool("shell_exec", {"command": command})
    return error_of(result)


async def _refusal_in_workspace_write(workspace: Path, command: str, *args: str) -> dict[str, Any]:
    async with serve(SX, workspace, *args) as client:
        result = await client.call_tool("shell_exec", {"command": command})
    return error_of(result)


async def test_rm_rf_home_in_read_only_mode_is_told_as_a_matter_of_the_mode(workspace: Path) -> None:
    """``rm -rf ~`` is refused in workspace-write too (rule rm-recursive-force: COMMAND_DENIED). In read-only mode the
    first deny is that same default rule, but it is marked ``undoable`` so ``_decide`` presents it as READ_ONLY_MODE
    and suggests restarting with --mode workspace-write. Expected COMMAND_DENIED; observed READ_ONLY_MODE."""
    writable = await _refusal_in_workspace_write(workspace, "rm -rf ~")
    assert writable["code"] == "COMMAND_DENIED", writable
    refused = await _refusal(workspace, "rm -rf ~")
    assert refused["code"] == "COMMAND_DENIED" and "workspace-write" not in refused["suggestion"], refused


async def test_a_read_only_first_finding_hides_a_real_deny_later_in_the_line(workspace: Path) -> None:
    """``echo hi > notes.txt; rm -rf ~``: the redirect finding is judged first (no-file-writes, a read-only rule),
    and of equal severities the first wins, so the refusal names only the mode and tells the model to have the server
    restarted in workspace-write — where the same line is still refused (rm-recursive-outside/force). Expected: the
    refusal names the rule that refuses it in every mode (not READ_ONLY_MODE); observed READ_ONLY_MODE, reason the
    redirect only."""
    line = "echo hi > notes.txt; rm -rf ~"
    writable = await _refusal_in_workspace_write(workspace, line)
    assert writable["code"] == "COMMAND_DENIED", writable
    refused = await _refusal(workspace, line)
    assert refused["code"] == "COMMAND_DENIED", refused


async def test_a_users_own_deny_rule_in_read_only_mode_is_told_as_a_matter_of_the_mode(
    workspace: Path, tmp_path: Path
) -> None:
    """With ``--mode read-only --policy mine.toml``, a deny rule of the user's own policy (not an id of the packaged
    default) refuses the line in workspace-write too, yet read-only presents it as READ_ONLY_MODE ("restart the
    server with --mode workspace-write"). Expected COMMAND_DENIED naming the user's rule; observed READ_ONLY_MODE."""
    policy = tmp_path / "mine.toml"
    policy.write_text(
        '[shell_exec]\nrules = [\n  { id = "no-cat-secrets", action = "deny", reason = "Never cat the secrets file.",'
        ' programs = ["cat"], args = ["secrets.txt"] },\n]\n',
        encoding="utf-8",
    )
    writable = await _refusal_in_workspace_write(workspace, "cat secrets.txt", "--policy", str(policy))
    assert writable["code"] == "COMMAND_DENIED" and "no-cat-secrets" in writable["message"], writable
    refused = await _refusal(workspace, "cat secrets.txt", "--policy", str(policy))
    assert refused["code"] == "COMMAND_DENIED" and "no-cat-secrets" in refused["message"], refused
