"""The modules that judge and apply a command's changes load with the first change there is to judge: a start, and
a session of commands that change nothing, do without them (issue 44: ~30 ms of every shell_exec start). The same
calls with a change load them and land it. So do the git rule and the hook reader (with the first path judged), the
guarded writer's content checks (with the first write), the background jobs (with the first job) and tomllib (with
a policy file of the user's): a session in a project that is not a repository, whose commands change nothing, never
loads them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from support import RawClient, console_script

JUDGING = (
    "mcp_server_guard.changes.apply",
    "mcp_server_guard.changes.effects",
    "mcp_server_guard.changes.plan",
    "mcp_server_guard.changes.undo_judged",
    "mcp_server_guard.changes.checkouts",
)
LATER = (
    "mcp_server_guard.git_dirs",
    "mcp_server_guard.hook_runs",
    "mcp_server_guard.hook_interpreters",
    "mcp_server_guard.files.write_checks",
    "mcp_server_guard.shell.jobs",
    "tomllib",
)


def _session(workspace: Path, tmp_path: Path, commands: list[str]) -> tuple[list[dict[str, Any]], set[str]]:
    """Each command's result, and every module an import statement of the server loaded."""
    err = tmp_path / "stderr.txt"
    client = RawClient([sys.executable, "-X", "importtime", console_script("mcp-server-shell-exec")], workspace,
                       stderr=err)  # fmt: skip
    results = []
    try:
        client.initialize()
        for i, command in enumerate(commands, 1):
            call = {"name": "shell_exec", "arguments": {"command": command}}
            results.append(client.request(i, "tools/call", call, timeout=60)["result"])
        client.end_input()
    finally:
        client.close()
    return results, client.imported()


def test_commands_that_change_nothing_never_load_the_judging_modules(workspace: Path, tmp_path: Path) -> None:
    results, loaded = _session(workspace, tmp_path, ["true", "cat hello.txt", "ls -la sub", "echo x > /dev/null"])
    for result in results:
        assert not result.get("isError"), result
        assert result["structuredContent"]["exitCode"] == 0
    assert "mcp_server_guard.changes.transactions" in loaded  # the copies are on: changes would be judged
    assert not [m for m in (*JUDGING, *LATER) if m in loaded]


@pytest.mark.parametrize("command", ["echo new > made.txt", "rm sub/inner.txt", "mkdir d && touch -d 2001-01-01 d"])
def test_a_command_that_changes_something_loads_them_and_its_change_lands(
    workspace: Path, tmp_path: Path, command: str
) -> None:
    results, loaded = _session(workspace, tmp_path, ["true", command])
    assert all(not r.get("isError") for r in results), results
    assert results[1]["structuredContent"]["exitCode"] == 0
    assert results[1]["structuredContent"]["changes"]["undo"], results[1]  # applied, and undoable
    assert {"mcp_server_guard.changes.effects", "mcp_server_guard.changes.apply"} <= loaded
    assert "mcp_server_guard.git_dirs" in loaded  # (the git rule, judging the paths it changed)
    if "made.txt" in command:
        assert (workspace / "made.txt").read_text() == "new\n"
    elif "rm" in command:
        assert not (workspace / "sub" / "inner.txt").exists()
    else:
        assert (workspace / "d").stat().st_mtime < 1e9 + 1e8


def test_a_background_job_loads_the_job_table_and_runs(workspace: Path, tmp_path: Path) -> None:
    err = tmp_path / "stderr.txt"
    client = RawClient([sys.executable, "-X", "importtime", console_script("mcp-server-shell-exec")], workspace,
                       stderr=err)  # fmt: skip
    try:
        client.initialize()
        started = {"name": "shell_exec", "arguments": {"command": "sleep 0.2; echo done", "yieldAfterSeconds": 0}}
        job = client.request(1, "tools/call", started, timeout=60)["result"]["structuredContent"]
        assert job["status"] == "running", job
        look = {"name": "shell_exec", "arguments": {"command": "", "jobId": job["jobId"], "yieldAfterSeconds": 20}}
        done = client.request(2, "tools/call", look, timeout=60)["result"]["structuredContent"]
        client.end_input()
    finally:
        client.close()
    assert done["status"] != "running" and "done" in done["stdout"], done
    assert "mcp_server_guard.shell.jobs" in client.imported()
