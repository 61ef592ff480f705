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


# -- logic-only cases, here only (the behaviours they vary are shown through the console scripts) --------


async def test_relative_and_absolute_paths_inside_the_jail_both_work(workspace: Path, mode: str) -> None:
    async with in_memory("file_read", workspace, mode=mode) as client:
        rel = await call(client, "file_read", path="sub/inner.txt")
        absolute = await call(client, "file_read", path=str(workspace / "sub" / "inner.txt"))
        dotted = await call(client, "file_read", path="sub/../sub/./inner.txt")
    for result in (rel, absolute, dotted):
        assert result.structured_content["content"] == "inner\n"
        assert result.structured_content["path"] == "sub/inner.txt"


async def test_paging_with_offset_and_limit_walks_the_whole_file(workspace: Path, tmp_path: Path, mode: str) -> None:
    policy = tmp_path / "small.toml"
    policy.write_text("[file_read]\nmax_read_bytes = 1000\n", encoding="utf-8")
    body = "".join(f"line {i:04d} é\n" for i in range(1, 501))
    (workspace / "pages.txt").write_text(body, encoding="utf-8")
    pages = []
    async with in_memory("file_read", workspace, mode=mode, policy=policy) as client:
        offset: int | None = 1
        while offset is not None:
            out = (await call(client, "file_read", path="pages.txt", offset=offset)).structured_content
            assert len(out["content"].encode()) <= 1000
            pages.append(out["content"])
            offset = out.get("nextOffset")
        limited = (await call(client, "file_read", path="pages.txt", offset=10, limit=2)).structured_content
    assert "".join(pages) == body
    assert len(pages) > 5
    assert limited["content"] == "line 0010 é\nline 0011 é\n"
    assert limited["nextOffset"] == 12
    assert limited["totalLines"] == 500


async def test_boms_and_non_utf8_text_are_decoded_and_reported(workspace: Path, mode: str) -> None:
    (workspace / "bom8.txt").write_bytes(b"\xef\xbb\xbfwith bom\n")
    (workspace / "utf16.txt").write_bytes("héllo\nwörld\n".encode("utf-16"))
    (workspace / "latin1.txt").write_bytes("café crème brûlée, déjà vu\n".encode("latin-1") * 3)
    async with in_memory("file_read", workspace, mode=mode) as client:
        bom8 = (await call(client, "file_read", path="bom8.txt")).structured_content
        utf16 = (await call(client, "file_read", path="utf16.txt")).structured_content
        latin1 = (await call(client, "file_read", path="latin1.txt")).structured_content
    assert bom8["content"] == "with bom\n" and bom8["bom"] is True and bom8["encoding"] == "utf-8"
    assert utf16["content"] == "héllo\nwörld\n" and utf16["encoding"].startswith("utf-16")
    assert utf16["totalLines"] == 2
    assert "café crème" in latin1["content"]
    assert latin1["encoding"] in ("iso8859-1", "latin-1", "cp1252")


async def test_create_dirs_makes_parents_only_when_asked(workspace: Path, mode: str) -> None:
    async with in_memory("file_write", workspace, mode=mode) as client:
        refused = await call(client, "file_write", path="a/b/c.txt", content="x")
        made = await call(client, "file_write", path="a/b/c.txt", content="x", createDirs=True)
        outside = await call(client, "file_write", path="../made-outside/c.txt", content="x", createDirs=True)
    assert error_of(refused)["code"] == "NOT_FOUND" and "createDirs" in error_of(refused)["suggestion"]
    assert made.structured_content["path"] == "a/b/c.txt"
    assert error_of(outside)["code"] == "PATH_OUTSIDE_JAIL"
    assert not (workspace.parent / "made-outside").exists()
