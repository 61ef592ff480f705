"""Text from a path, a model's argument or a command that reaches a person — an error, a result's text block, the
audit viewer (``--json`` included) — shows control and bidi characters as escapes instead of obeying them.
Through the real servers and the real ``mcp-guard``."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp.types import ElicitRequestParams, ElicitResult

from mcp_server_guard.shell import egress
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


class _Decliner:
    """A person who reads every question and says no."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, _ctx: Any, params: ElicitRequestParams) -> ElicitResult:
        self.asked.append(params.message)
        return ElicitResult(action="decline")


ASK_ECHO = '[[shell_exec.rules]]\nid = "ask-echo"\naction = "ask"\nreason = "asked in this test"\nprograms = ["echo"]\n'


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
async def test_attack_a_command_line_that_reads_as_another_in_the_approval_question_is_shown_escaped(
    workspace: Path, tmp_path: Path
) -> None:
    # The line a person approves: a carriage return and an ANSI "clear line" would show only what follows them.
    policy = tmp_path / "policy.toml"
    policy.write_text(ASK_ECHO)
    person = _Decliner()
    async with serve(
        "mcp-server-shell-exec", workspace, "--policy", str(policy), elicitation_callback=person
    ) as client:
        result = await client.call_tool("shell_exec", {"command": f"echo hi  # note{TRICKS} ls\nls"})
    assert result.is_error and (result.meta or {})["mcp-guard/error"]["code"] == "ASK_DECLINED", result
    [asked] = person.asked
    assert raw_in(asked) == [] and "\\x1b[2K\\rok\\u202etxt.exe\\x9b31m ls" in asked, asked
    assert "\n    ls\n" in asked  # the command's own line break kept, its next line indented as the first


def test_a_host_name_with_a_control_character_is_refused_by_the_proxy() -> None:
    head = b"CONNECT pypi.org\x1b[8m.attacker.example:443 HTTP/1.1\r\nHost: x\r\n\r\n"
    left, right = socket.socketpair()
    try:
        left.sendall(head)

        async def read() -> None:
            with pytest.raises(egress.BadRequest, match="control character"):
                await egress._read_head(right)

        right.setblocking(False)
        asyncio.run(read())
    finally:
        left.close()
        right.close()
