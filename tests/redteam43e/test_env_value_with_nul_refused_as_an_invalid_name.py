"""docs/errors.md: "`ENV_REFUSED` | SECURITY | shell_exec: an `env` entry that is no variable (an invalid name, a `()`
function value)". An env entry with a valid name and a value holding a NUL byte (``{"X": "a\\u0000b"}``) is refused
with "Environment name 'X' is not valid." — the name is valid; what was refused is the value. The message (recorded in
the result and audit) names the wrong part, and the docs' row lists neither case."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from support import serve

SX = "mcp-server-shell-exec"


@pytest.mark.anyio
async def test_nul_in_a_value_is_reported_as_an_invalid_name(workspace: Path) -> None:
    """Expected: the refusal says the value of X is refused (a NUL byte), not that the name X is invalid.
    Observed: "ENV_REFUSED (SECURITY): Environment name 'X' is not valid." """
    async with serve(SX, workspace) as client:
        with anyio.fail_after(60):
            result = await client.call_tool("shell_exec", {"command": "echo hi", "env": {"X": "a\x00b"}})
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error
    assert "name 'X' is not valid" not in text, text
