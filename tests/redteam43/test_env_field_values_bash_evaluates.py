"""Issue 43 made the call's ``env`` field "judged exactly as the same assignments written before the line". Bash
evaluates some values as code: a name in arithmetic (recursively: ``x=y``, ``y='a[$(…)]'``, ``$((x))`` runs what y's
subscript holds), and a name given to ``printf -v``, ``test -v``, ``declare``, where a subscript ``a[$(…)]`` runs its
substitution. Written in the line (``x='a[$(…)]'; printf -v "$x" hi``) the substitution is judged; from the env field
only a value named *directly* in arithmetic is (``code-in-data``). What must hold: a value of the env field never makes
bash run a command the same line would refuse.

Payloads travel as JSON env values only and do nothing but create a marker file inside the test's tmp dir (or try
to, where the box's read-only jail refuses it)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from support import in_memory, serve

pytestmark = pytest.mark.anyio
SX = "mcp-server-shell-exec"

# (command, env) — the payload is put in place of PAYLOAD
CASES = {
    "printf-v-name": ('printf -v "$x" hi', {"x": "a[PAYLOAD]"}),
    "test-v-name": ('test -v "$x"', {"x": "a[PAYLOAD]"}),
}
# Bash evaluates a name's value in arithmetic recursively: neither the env field nor the same assignments in the line
# are judged (x's own value holds no `$`, and y is never named in the expression).
RECURSIVE = ("echo $((x))", {"x": "y", "y": "a[PAYLOAD]"})


def _fill(env: dict[str, str], payload: str) -> dict[str, str]:
    return {k: v.replace("PAYLOAD", payload) for k, v in env.items()}


@pytest.mark.parametrize("case", list(CASES))
async def test_env_value_bash_evaluates_runs_a_refused_program_in_read_only_mode(workspace: Path, case: str) -> None:
    """--mode read-only without the box (there the read-only allow-list is the guard): ``touch`` is not on the list
    (refused when written in the line) and what cannot be
    decided is denied. Expected: refused (COMMAND_DENIED/READ_ONLY_MODE) and touch never runs. Observed: allowed
    (read-only-tools); touch runs and only the box's read-only mount stops its write (stderr "touch: cannot touch")."""
    command, env = CASES[case]
    env = _fill(env, "$(touch ro-marker)")
    async with serve(SX, workspace, "--mode", "read-only", "--sandbox", "off") as client:
        in_line = await client.call_tool(
            "shell_exec", {"command": f"{'; '.join(f'{k}={shlex.quote(v)}' for k, v in env.items())}; {command}"}
        )
        through_field = await client.call_tool("shell_exec", {"command": command, "env": env, "timeoutSeconds": 30})
    assert in_line.is_error, in_line  # the same assignments in the line: refused
    out = through_field.structured_content or {}
    assert through_field.is_error and "touch" not in out.get("stderr", ""), out


@pytest.mark.parametrize("case", list(CASES))
async def test_env_value_bash_evaluates_writes_outside_the_jail_with_sandbox_off(
    workspace: Path, tmp_path: Path, case: str
) -> None:
    """--sandbox off: the policy and the jail are all there is. A redirect to a file outside the allowed directories
    is refused (REDIRECT_OUTSIDE_JAIL) when written in the line; through the env field the same redirect inside a
    subscript is never seen. Expected: refused, no marker outside. Observed: allowed, the marker lands in
    tmp/outside."""
    marker = tmp_path / "outside" / f"marker-{case}"
    command, env = CASES[case]
    env = _fill(env, f"$(echo pwned > {marker})")
    async with in_memory("shell_exec", workspace) as client:
        in_line = await client.call_tool(
            "shell_exec", {"command": f"{'; '.join(f'{k}={shlex.quote(v)}' for k, v in env.items())}; {command}"}
        )
        assert in_line.is_error and not marker.exists(), in_line
        through_field = await client.call_tool("shell_exec", {"command": command, "env": env, "timeoutSeconds": 30})
    assert through_field.is_error and not marker.exists(), (through_field.structured_content, marker.exists())


@pytest.mark.parametrize("where", ["env-field", "line"])
async def test_arithmetic_through_a_second_name_runs_a_refused_program_in_read_only_mode(
    workspace: Path, where: str
) -> None:
    """``$((x))`` with x=y and y='a[$(touch …)]': bash evaluates x, then y, and runs the substitution. The walker
    only looks at the names written in the expression (x, whose value holds no `$`), so the line is allowed as
    read-only-tools in --mode read-only, from the env field and written in the line alike. Expected: refused (touch is
    not on the allow-list; what cannot be decided is denied); observed: allowed, touch runs (stderr "touch: cannot
    touch 'ro-marker': Read-only file system")."""
    command, env = RECURSIVE
    env = _fill(env, "$(touch ro-marker)")
    line = f"{'; '.join(f'{k}={shlex.quote(v)}' for k, v in env.items())}; {command}"
    arguments = {"command": command, "env": env} if where == "env-field" else {"command": line}
    async with serve(SX, workspace, "--mode", "read-only", "--sandbox", "off") as client:
        result = await client.call_tool("shell_exec", {**arguments, "timeoutSeconds": 30})
    out = result.structured_content or {}
    assert result.is_error and "touch" not in out.get("stderr", ""), out


@pytest.mark.parametrize("where", ["env-field", "line"])
async def test_arithmetic_through_a_second_name_writes_outside_the_jail_with_sandbox_off(
    workspace: Path, tmp_path: Path, where: str
) -> None:
    """As above with --sandbox off and the default policy: the substitution's redirect to a file outside the allowed
    directories (REDIRECT_OUTSIDE_JAIL when written plainly) is never seen. Expected: refused, no marker in
    tmp/outside; observed: allowed and the marker is written outside the jail."""
    marker = tmp_path / "outside" / f"marker-{where}"
    command, env = RECURSIVE
    env = _fill(env, f"$(echo pwned > {marker})")
    line = f"{'; '.join(f'{k}={shlex.quote(v)}' for k, v in env.items())}; {command}"
    arguments = {"command": command, "env": env} if where == "env-field" else {"command": line}
    async with in_memory("shell_exec", workspace) as client:
        result = await client.call_tool("shell_exec", {**arguments, "timeoutSeconds": 30})
    assert result.is_error and not marker.exists(), (result.structured_content, marker.exists())
