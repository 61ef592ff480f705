"""Issue 42 (3), a false refusal: a file_read server over HOME (it runs no commands and writes nothing) makes a
shell_exec server on ``~/proj`` with default settings refuse to start: "the state directory ~/.local/state/mcp-guard
lies inside a directory another running server of yours allows ...; its commands could rewrite it". A file_read
server has no commands and cannot rewrite anything, and the state directory is registered and so hidden from every
server's tools (docs/shell_exec.md: the default state directories are "hidden from every tool of every server
wherever they lie"; docs/configuration.md names no such start refusal). Observed: exit with that error; expected
the shell server to start (at most refuse when the other server can write)."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest

from support import serve
from support.boxed import Person

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

SX, FR = "mcp-server-shell-exec", "mcp-server-file-read"


async def _sh(client: object, command: str) -> dict[str, object]:
    with anyio.fail_after(90):
        result = await client.call_tool("shell_exec", {"command": command, "timeoutSeconds": 60})  # type: ignore[attr-defined]
    assert not result.is_error, result
    return dict(result.structured_content)


async def test_false_refusal_shell_server_beside_a_file_read_server_over_home(
    tmp_path: Path, isolated_home: Path
) -> None:
    proj = isolated_home / "proj"
    proj.mkdir()
    (isolated_home / "notes.txt").write_text("n\n")
    async with serve(FR, isolated_home, audit=tmp_path / "fr-audit.jsonl") as reader:
        with anyio.fail_after(60):
            await reader.call_tool("file_read", {"path": "notes.txt"})
        async with serve(SX, proj, audit=tmp_path / "sx-audit.jsonl", elicitation_callback=Person()) as sx:
            assert (await _sh(sx, "echo a > a.txt"))["transaction"] == "applied"
