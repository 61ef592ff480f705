"""Issue 43: refusals name their real reason. The env field is judged by prefixing a generated line
``export NAME=<quoted value>`` to the command (rules.py ``PolicyEngine.expand``); what that generated line makes the
engine say is then reported as if the caller had written it.

1. An allow-list policy (docs/shell_exec.md: "`allowlist`: only what an `allow` rule names runs") that allows ``ls``:
   ``ls`` with ``env: {"LC_ALL": "C"}`` is refused ``'export' (used this way) is not allowed by the allow-list
   policy`` — the call has no ``export``; before issue 43's change the same call ran.
2. ``ls`` with three 100,000-byte env values (each under the kernel's 128 KiB per string, all under ARG_MAX) is refused
   COMMAND_TOO_COMPLEX "the command line is 300021 bytes" — the command line is 2 bytes."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from support import error_of, serve

pytestmark = pytest.mark.anyio
SX = "mcp-server-shell-exec"


async def test_allowlist_refuses_an_env_field_as_an_export_the_call_never_wrote(
    workspace: Path, tmp_path: Path
) -> None:
    """Expected: ``ls`` (allowed by rule ls-ok) runs with LC_ALL=C, or a refusal about the env field. Observed: deny
    not-in-allowlist naming 'export'."""
    policy = tmp_path / "allow.toml"
    policy.write_text(
        '[shell_exec]\nmode = "allowlist"\n[[shell_exec.rules]]\nid = "ls-ok"\naction = "allow"\nreason = "ok"\n'
        'programs = ["ls"]\n',
        encoding="utf-8",
    )
    async with serve(SX, workspace, "--policy", str(policy)) as client:
        with anyio.fail_after(60):
            plain = await client.call_tool("shell_exec", {"command": "ls"})
            with_env = await client.call_tool("shell_exec", {"command": "ls", "env": {"LC_ALL": "C"}})
    assert not plain.is_error, plain
    assert not with_env.is_error and "export" not in str(with_env.content), with_env.content


async def test_big_env_values_are_blamed_on_the_command_line(workspace: Path) -> None:
    """Expected: ``ls`` runs (each value under MAX_ARG_STRLEN, the total under ARG_MAX), or a refusal that names the
    env field. Observed: COMMAND_TOO_COMPLEX 'the command line is 300021 bytes; the limit is 262144'."""
    env = {f"V{i}": "y" * 100_000 for i in range(3)}
    async with serve(SX, workspace) as client:
        with anyio.fail_after(60):
            result = await client.call_tool("shell_exec", {"command": "ls", "env": env})
    if result.is_error:
        error = error_of(result)
        assert "command line is" not in error["message"], error
    else:
        assert result.structured_content["exitCode"] == 0
