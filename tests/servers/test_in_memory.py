"""The fast tier: each server's logic through the SDK's in-memory client, in both protocol eras.

The same servers as the console scripts build (``support.memory.build`` goes through the shared flag
validation), without a process per test; what only a process shows (start-up, flags, signals, the
stdio transport, the kernel sandbox) is tested through the real console scripts elsewhere.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from mcp.client import ClientRequestContext
from mcp.types import ElicitRequestParams, ElicitResult

from support import error_of, in_memory, text_of

pytestmark = pytest.mark.anyio


async def call(client: Any, tool: str, **arguments: Any) -> Any:
    return await client.call_tool(tool, arguments)


async def test_file_read_returns_a_page_and_refuses_every_way_out_of_the_jail(workspace: Path, mode: str) -> None:
    async with in_memory("file_read", workspace, mode=mode) as client:
        page = await call(client, "file_read", path="hello.txt", offset=2)
        refused = [
            await call(client, "file_read", path=p)
            for p in ("../outside/secret.txt", "/etc/passwd", "../proj-evil/secret.txt", "sub/../../outside/secret.txt")
        ]
    assert page.structured_content["content"] == "world\n"
    assert page.structured_content["startLine"] == 2
    assert page.structured_content["sha256"] == hashlib.sha256(b"hello\nworld\n").hexdigest()
    for result in refused:
        assert error_of(result)["code"] == "PATH_OUTSIDE_JAIL"
        assert "SECRET" not in text_of(result)


async def test_file_read_refuses_binary_and_a_symlink_out(workspace: Path, mode: str) -> None:
    (workspace / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)
    (workspace / "link.txt").symlink_to(workspace.parent / "outside" / "secret.txt")
    async with in_memory("file_read", workspace, mode=mode) as client:
        binary = await call(client, "file_read", path="blob.bin")
        link = await call(client, "file_read", path="link.txt")
    assert error_of(binary)["code"] == "BINARY_FILE"
    assert error_of(link)["code"] == "SYMLINK_ESCAPE"


async def test_file_write_creates_then_refuses_to_clobber_and_checks_the_expected_hash(
    workspace: Path, mode: str
) -> None:
    async with in_memory("file_write", workspace, mode=mode) as client:
        created = await call(client, "file_write", path="new.txt", content="one\n")
        clobber = await call(client, "file_write", path="new.txt", content="two\n")
        stale = await call(
            client, "file_write", path="new.txt", content="two\n", overwrite=True, expectedSha256="0" * 64
        )
        replaced = await call(
            client,
            "file_write",
            path="new.txt",
            content="two\n",
            overwrite=True,
            expectedSha256=hashlib.sha256(b"one\n").hexdigest(),
        )
    assert created.structured_content["created"] is True
    assert error_of(clobber)["code"] == "FILE_EXISTS"
    assert error_of(stale)["code"] == "CONFLICT"
    assert replaced.structured_content["backup"]
    assert (workspace / "new.txt").read_text() == "two\n"


async def test_file_write_refuses_outside_and_protected_paths(workspace: Path, mode: str) -> None:
    async with in_memory("file_write", workspace, mode=mode) as client:
        outside = await call(client, "file_write", path="../outside/x.txt", content="x")
        hook = await call(client, "file_write", path=".git/hooks/pre-commit", content="hello\n")
    assert error_of(outside)["code"] == "PATH_OUTSIDE_JAIL"
    assert error_of(hook)["code"] == "PROTECTED_PATH"
    assert not (workspace.parent / "outside" / "x.txt").exists()
    assert not (workspace / ".git").exists()


async def test_shell_exec_runs_allowed_lines_and_refuses_denied_ones(workspace: Path, mode: str) -> None:
    async with in_memory("shell_exec", workspace, mode=mode) as client:
        echo = await call(client, "shell_exec", command="echo hi; echo err >&2")
        argv = await call(client, "shell_exec", command="printf", args=["%s|", "a b", "$HOME"])
        denied = await call(client, "shell_exec", command="rm -rf /")
        redirect = await call(client, "shell_exec", command="echo x > ../outside/planted")
    assert echo.structured_content["stdout"] == "hi\n"
    assert echo.structured_content["stderr"] == "err\n"
    assert echo.structured_content["exitCode"] == 0
    assert argv.structured_content["stdout"] == "a b|$HOME|"
    assert error_of(denied)["code"] == "COMMAND_DENIED"
    assert error_of(redirect)["code"] == "REDIRECT_OUTSIDE_JAIL"
    assert not (workspace.parent / "outside" / "planted").exists()


async def test_shell_exec_ask_rule_runs_only_on_an_explicit_yes(workspace: Path, mode: str) -> None:
    asked: list[str] = []

    async def answer(_ctx: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"approve": "yes" in params.message})

    async with in_memory("shell_exec", workspace, mode=mode, elicitation_callback=answer) as client:
        yes = await call(client, "shell_exec", command="sudo echo yes")
        no = await call(client, "shell_exec", command="sudo echo no")
    async with in_memory("shell_exec", workspace, mode=mode) as client:
        unavailable = await call(client, "shell_exec", command="sudo echo no")
    assert len(asked) == 2 and "sudo echo yes" in asked[0]
    assert yes.structured_content["policyDecision"] == "ask-approved"
    assert error_of(no)["code"] == "ASK_DECLINED" and error_of(no)["policyDecision"] == "ask-declined"
    assert error_of(unavailable)["code"] == "ASK_UNAVAILABLE"
    assert error_of(unavailable)["policyDecision"] == "ask-unavailable"
