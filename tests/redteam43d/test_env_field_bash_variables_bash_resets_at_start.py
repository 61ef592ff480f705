"""docs/shell_exec.md and rules.py ``PolicyEngine.expand``: the call's env field "is judged as the same values exported
before the line ($X expands to the field's value)". But the env field does not reach bash as an ``export`` after it
started: the server runs ``/bin/bash --noprofile --norc -c LINE`` with the field in bash's *startup* environment,
and bash sets some of its own variables at start, whatever the environment says: ``BASH`` (the shell's own path),
``BASH_VERSION``, ``PPID``, ``SHLVL``, ``BASHPID``, ``SRANDOM`` …  The engine expands ``$BASH`` to the field's value,
bash to ``/usr/bin/bash``.

So ``env: {"BASH": "echo"}`` with ``$BASH -c 'PAYLOAD'`` is judged as ``echo -c 'PAYLOAD'`` (allowed, nothing to look
through) while bash runs PAYLOAD. Without the field ``$BASH`` is a program only known at run time (asked, or on a
copy judged by its effects); with it a deny rule is passed and a read-only session writes.

Security-relevant (a regression of issue 43's change: before it ``$BASH`` was never given a value). Harmful lines are
only strings given to the engine in-process; through the server the payload is ``touch`` of a marker in tmp."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from mcp_server_guard.policy import load_policy
from mcp_server_guard.shell.strings.rules import PolicyEngine
from support import in_memory, serve

SX = "mcp-server-shell-exec"
SEVERITY = {"allow": 0, "ask": 1, "deny": 2}
PAYLOAD = "rm -rf ~"


# Without a copy only (on a copy a program named at run time is judged by what it does, env field or not: by design).
@pytest.mark.parametrize("effects", [False], ids=["no-copy"])
def test_dollar_bash_from_the_env_field_hides_what_bash_runs(tmp_path: Path, effects: bool) -> None:
    """Expected: ``$BASH -c 'rm -rf ~'`` with env BASH=echo no less strict than the payload itself (deny), since bash
    runs the payload. Observed: allow, rule None ('no rule matched')."""
    engine = PolicyEngine(load_policy().shell_exec, effects=effects, roots=[str(tmp_path)], home=str(tmp_path / "h"))
    payload = engine.decide(PAYLOAD)
    through_field = engine.decide(f"$BASH -c '{PAYLOAD}'", env={"BASH": "echo"})
    assert payload.action == "deny", payload
    assert SEVERITY[through_field.action] >= SEVERITY["ask"], through_field


@pytest.mark.anyio
async def test_dollar_bash_from_the_env_field_passes_a_deny_rule(workspace: Path, tmp_path: Path) -> None:
    """A policy denies ``touch``; ``--sandbox off`` so that only the policy stands between the line and the write.
    Expected: ``$BASH -c 'touch M'`` with env BASH=echo refused, no marker. Observed: allowed, bash (not echo) runs
    touch and the marker exists."""
    policy = tmp_path / "p.toml"
    policy.write_text(
        '[[shell_exec.rules]]\nid = "no-touch"\naction = "deny"\nreason = "no touching"\nprograms = ["touch"]\n',
        encoding="utf-8",
    )
    marker = tmp_path / "outside" / "bash-marker"
    marker.parent.mkdir(exist_ok=True)
    async with in_memory("shell_exec", workspace, policy=policy) as client:
        with anyio.fail_after(60):
            plain = await client.call_tool("shell_exec", {"command": f"touch '{marker}'"})
        assert plain.is_error and not marker.exists()
        with anyio.fail_after(60):
            result = await client.call_tool(
                "shell_exec", {"command": f"$BASH -c \"touch '{marker}'\"", "env": {"BASH": "echo"}}
            )
    assert result.is_error and not marker.exists(), (result.structured_content, marker.exists())


@pytest.mark.anyio
async def test_dollar_bash_from_the_env_field_writes_in_read_only_mode(workspace: Path, tmp_path: Path) -> None:
    """``--mode read-only --sandbox off``: the line is judged as ``echo -c '…'`` (a reading program). Expected:
    refused, no marker. Observed: allowed, the marker is written."""
    marker = tmp_path / "outside" / "ro-marker"
    marker.parent.mkdir(exist_ok=True)
    async with serve(SX, workspace, "--mode", "read-only", "--sandbox", "off") as client:
        with anyio.fail_after(60):
            result = await client.call_tool(
                "shell_exec", {"command": f"$BASH -c \"touch '{marker}'\"", "env": {"BASH": "echo"}}
            )
    assert result.is_error and not marker.exists(), (result.structured_content, marker.exists())
