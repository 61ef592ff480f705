"""Control and bidi characters are shown escaped in errors, results and ``mcp-guard audit`` — but the other views a
person reads in a terminal print them raw: ``mcp-guard history`` prints each call's command as the model sent it
(only *evicted* calls go through ``printable``), and ``mcp-guard history list`` / ``history restore`` print the
saved file's path as it is. A command or a file name carrying ``ESC[2K\\r`` rewrites the line the user reads
(hides the real command behind a fake one); ``U+202E`` reverses it.

Passes when those views pass commands and paths through ``printable`` as ``audit`` does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from support import console_script, serve

pytestmark = pytest.mark.anyio

TRICKS = "\x1b[2K\rok\u202etxt.exe\x9b31m"  # clear the line, return, reverse, a C1 control sequence: harmless
RAW = ("\x1b", "\r", "\u202e", "\x9b")


def raw_in(text: str) -> list[str]:
    return [repr(c) for c in RAW if c in text]


def guard(*args: str) -> str:
    shown = subprocess.run([console_script("mcp-guard"), *args], capture_output=True, timeout=60, env=dict(os.environ))
    assert shown.returncode == 0, shown.stderr
    return shown.stdout.decode("utf-8", "surrogateescape")


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
async def test_attack_escapes_in_a_command_reach_mcp_guard_history_raw(workspace: Path) -> None:
    async with serve("mcp-server-shell-exec", workspace) as client:
        result = await client.call_tool("shell_exec", {"command": f"echo made > made.txt # {TRICKS}"})
    assert not result.is_error, result
    assert (workspace / "made.txt").exists()
    shown = guard("history")
    assert "made" in shown or "shell_exec" in shown, shown
    assert raw_in(shown) == [], shown


async def test_attack_escapes_in_a_saved_path_reach_mcp_guard_history_list_raw(workspace: Path) -> None:
    name = f"notes{TRICKS}.txt"
    (workspace / name).write_text("old\n")
    async with serve("mcp-server-file-write", workspace) as client:
        wrote = await client.call_tool("file_write", {"path": name, "content": "new\n", "overwrite": True})
    assert not wrote.is_error, wrote
    shown = guard("history", "list")
    assert "notes" in shown, shown
    assert raw_in(shown) == [], shown


async def test_attack_escapes_in_a_written_path_reach_file_writes_result_raw(workspace: Path) -> None:
    # Red team 42m F4: file_write's errors escaped the path, its success result (text and structured) did not.
    async with serve("mcp-server-file-write", workspace) as client:
        wrote = await client.call_tool("file_write", {"path": f"notes{TRICKS}.txt", "content": "new\n"})
    assert not wrote.is_error, wrote
    text = " ".join(getattr(block, "text", "") for block in wrote.content)
    assert "notes" in text and raw_in(text) == [], text
    assert raw_in(str((wrote.structured_content or {})["path"])) == [], wrote.structured_content
    assert (workspace / f"notes{TRICKS}.txt").read_text() == "new\n"


def test_attack_escapes_in_a_checked_line_reach_mcp_guard_checks_answer_raw() -> None:
    # Red team 42m F5: `mcp-guard check` printed the line's trigger and commands as given.
    shown = subprocess.run([console_script("mcp-guard"), "check", f"echo {TRICKS}"], capture_output=True, timeout=60,
                           env=dict(os.environ))  # fmt: skip
    out = shown.stdout.decode("utf-8", "surrogateescape")
    assert "echo" in out and raw_in(out) == [], out
