"""Two servers of one user with different state directories (another XDG_STATE_HOME): each one's state — copies,
history, audit log — lies out of reach of the other's tools and commands (common/src/mcp_server_guard/registry.py;
docs/security.md "Where the state lives"), and a server whose state would lie inside a directory another running
server allows refuses to start."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import anyio
import pytest

from support import console_script, serve
from support.boxed import Person

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

SX, FR, FW = "mcp-server-shell-exec", "mcp-server-file-read", "mcp-server-file-write"


def _tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    """``big/`` (the second server's root) holds the first server's project and its state directory."""
    big = tmp_path / "big"
    project_a = big / "a"
    project_a.mkdir(parents=True)
    (project_a / "notes.txt").write_text("kept by a\n")
    state_a = big / "state-a"
    state_a.mkdir()
    return big, project_a, state_a


async def _call(client: object, tool: str, arguments: dict[str, object]) -> tuple[bool, str]:
    with anyio.fail_after(90):
        result = await client.call_tool(tool, arguments)  # type: ignore[attr-defined]
    return bool(result.is_error), " ".join(getattr(c, "text", "") for c in result.content)


async def test_attack_commands_of_one_server_read_another_servers_history_and_audit(tmp_path: Path) -> None:
    big, project_a, state_a = _tree(tmp_path)
    audit_a = state_a / "mcp-guard" / "audit.jsonl"
    env_a = {"XDG_STATE_HOME": str(state_a)}
    async with serve(SX, project_a, audit=audit_a, env=env_a, elicitation_callback=Person()) as a:
        failed, text = await _call(a, "shell_exec", {"command": "echo changed > notes.txt", "timeoutSeconds": 60})
        assert not failed, text
    history = state_a / "mcp-guard" / "history"
    assert audit_a.is_file() and history.is_dir()  # a's state, inside big/, with a's server gone

    env_b = {"XDG_STATE_HOME": str(tmp_path / "state-b")}
    audit_b = tmp_path / "state-b" / "audit.jsonl"
    relative = os.path.relpath(audit_a, big)
    async with serve(SX, big, audit=audit_b, env=env_b, elicitation_callback=Person()) as b:
        for command in (f"cat {relative}", f"ls -R {os.path.relpath(history, big)}", "grep -rl 'kept by a' state-a"):
            failed, text = await _call(b, "shell_exec", {"command": command, "timeoutSeconds": 60})
            assert "kept by a" not in text and "audit_id" not in text and "calls" not in text, (command, text)
        failed, text = await _call(b, "shell_exec", {"command": f"echo forged >> {relative}", "timeoutSeconds": 60})
    assert "forged" not in audit_a.read_text()
    async with serve(FR, big, audit=audit_b, env=env_b) as reader:
        failed, text = await _call(reader, "file_read", {"path": relative})
        assert failed and "audit_id" not in text, text


async def test_a_server_whose_state_lies_inside_another_running_servers_root_refuses_to_start(tmp_path: Path) -> None:
    big, project_a, state_a = _tree(tmp_path)
    env_b = {"XDG_STATE_HOME": str(tmp_path / "state-b")}
    history_b = ("--history-dir", str(tmp_path / "state-b" / "history"))
    async with serve(FW, big, *history_b, audit=tmp_path / "state-b" / "audit.jsonl", env=env_b) as b:
        await _call(b, "file_write", {"path": "a/b.txt", "content": "b\n"})
        started = subprocess.run(
            [console_script(SX), "--audit-log", str(state_a / "audit.jsonl")],
            cwd=project_a, stdin=subprocess.DEVNULL, capture_output=True, timeout=60, check=False,
            env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "state-a2")},
        )  # fmt: skip
        assert started.returncode == 2, started
        assert b"another running server" in started.stderr, started.stderr
        assert not (state_a / "audit.jsonl").exists()
    # b has stopped: nothing holds that directory now, and the server starts.
    started = subprocess.run(
        [console_script(FR), "--audit-log", str(state_a / "audit.jsonl")],
        cwd=project_a, input=b"", capture_output=True, timeout=60, check=False,
        env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "state-a2")},
    )  # fmt: skip
    assert started.returncode == 0, started.stderr


async def test_a_reading_server_over_the_state_does_not_stop_a_server_from_starting(tmp_path: Path) -> None:
    """A file_read server over HOME (a common host setup) cannot change the state directory below it, and its tools
    never see it (registered state is hidden from every server): shell_exec with the default state starts."""
    big, project_a, state_a = _tree(tmp_path)
    env_b = {"XDG_STATE_HOME": str(tmp_path / "state-b")}
    async with serve(FR, big, audit=tmp_path / "state-b" / "audit.jsonl", env=env_b) as b:
        await _call(b, "file_read", {"path": "a/notes.txt"})
        started = subprocess.run(
            [console_script(SX), "--audit-log", str(state_a / "audit.jsonl")],
            cwd=project_a, input=b"", capture_output=True, timeout=60, check=False,
            env={**os.environ, "XDG_STATE_HOME": str(state_a)},
        )  # fmt: skip
        assert started.returncode == 0, started.stderr
        failed, text = await _call(b, "file_read", {"path": "state-a/audit.jsonl"})
        assert failed, text
