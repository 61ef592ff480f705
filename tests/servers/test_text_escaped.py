"""Text from a path, a model's argument or a command that reaches a person — an error, a result's text block, the
audit viewer (``--json`` included) — shows control and bidi characters as escapes instead of obeying them.
Through the real servers and the real ``mcp-guard``."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from support import console_script, serve, text_of

pytestmark = pytest.mark.anyio

# Harmless terminal tricks: clear the line, return to its start, reverse what follows, a C1 control sequence.
TRICKS = "\x1b[2K\rok\u202etxt.exe\x9b31m"
RAW = ("\x1b", "\r", "\u202e", "\x9b")


def raw_in(text: str) -> list[str]:
    return [repr(c) for c in RAW if c in text]


async def test_attack_terminal_escapes_in_a_path_are_shown_not_obeyed_in_errors(workspace: Path) -> None:
    async with serve("mcp-server-file-read", workspace) as client:
        result = await client.call_tool("file_read", {"path": f"missing{TRICKS}.txt"})
    assert result.is_error
    text = text_of(result)
    assert raw_in(text) == [] and "\\x1b" in text and "\\u202e" in text, text


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
async def test_attack_terminal_escapes_in_command_output_are_shown_in_the_text_block(workspace: Path) -> None:
    (workspace / "tricks.txt").write_text(f"line one\n{TRICKS}\ttab kept\n")
    async with serve("mcp-server-shell-exec", workspace) as client:
        result = await client.call_tool("shell_exec", {"command": "cat tricks.txt"})
    text = result.content[0].text  # type: ignore[union-attr]
    assert raw_in(text) == [] and "line one\n" in text and "\ttab kept" in text, text
    assert (result.structured_content or {})["stdout"] == f"line one\n{TRICKS}\ttab kept\n"  # the data as it was


async def test_attack_bidi_and_c1_characters_reach_the_audit_viewer_escaped(workspace: Path, tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    async with serve("mcp-server-file-read", workspace, audit=audit) as client:
        await client.call_tool("file_read", {"path": f"missing{TRICKS}.txt"})
    env = {**os.environ, "HOME": str(tmp_path)}
    for extra in ([], ["--json"]):
        shown = subprocess.run([console_script("mcp-guard"), "audit", "--audit-log", str(audit), *extra],
                               capture_output=True, text=True, timeout=60, env=env)  # fmt: skip
        assert shown.returncode == 0 and "missing" in shown.stdout, shown.stderr
        assert raw_in(shown.stdout) == [], shown.stdout
