"""environment.py: "*command-valued* names (``PAGER``, ``GIT_SSH_COMMAND``, ``LESSOPEN`` …) hold a command line that
some program runs: the value is judged as a command line" and the env field "is judged exactly as the same
assignments written before the line". ``CC`` is in no table (``RUSTC_WRAPPER`` is), yet GNU make imports it: with
``hello.c`` and no Makefile, ``make hello`` runs its built-in rule ``$(CC) … hello.c -o hello`` through ``/bin/sh -c``.

So ``env: {"CC": "touch M #"}`` with ``make hello`` is judged as a plain ``make`` (allowed, 'no rule matched') while
sh runs ``touch M``, which a rule denying ``touch`` refuses when written plainly. The payload is a ``touch`` of a
marker in the test's tmp dir; harmful text only travels as data."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest

from mcp_server_guard.policy import load_policy
from mcp_server_guard.shell.strings.rules import PolicyEngine
from support import in_memory

SEVERITY = {"allow": 0, "ask": 1, "deny": 2}
POLICY = '[[shell_exec.rules]]\nid = "no-touch"\naction = "deny"\nreason = "no touching"\nprograms = ["touch"]\n'


CASES = [("make hello", {"CC": "touch {m} #"}), ("CC='touch {m} #' make hello", None)]


@pytest.mark.parametrize(("line", "env"), CASES, ids=["env-field", "line-assignment"])
def test_cc_value_not_judged_as_the_command_make_runs(tmp_path: Path, line: str, env: dict[str, str] | None) -> None:
    """Expected: no less strict than ``touch M`` (deny no-touch). Observed: allow."""
    policy = tmp_path / "p.toml"
    policy.write_text(POLICY, encoding="utf-8")
    engine = PolicyEngine(load_policy(policy).shell_exec, roots=[str(tmp_path)], home=str(tmp_path / "h"))
    m = tmp_path / "M"
    assert engine.decide(f"touch {m}").action == "deny"
    env = {k: v.format(m=m) for k, v in env.items()} if env else None
    verdict = engine.decide(line.format(m=m), env=env)
    assert SEVERITY[verdict.action] >= SEVERITY["ask"], verdict


@pytest.mark.anyio
@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
async def test_cc_env_field_lets_make_pass_a_deny_rule(workspace: Path, tmp_path: Path) -> None:
    """``--sandbox off``, a policy denying touch, ``hello.c`` in the project. Expected: refused, no marker. Observed:
    allowed, make's built-in rule runs ``touch M`` and the marker exists."""
    policy = tmp_path / "p.toml"
    policy.write_text(POLICY, encoding="utf-8")
    (workspace / "hello.c").write_text("int main(void) { return 0; }\n", encoding="utf-8")
    marker = tmp_path / "outside" / "cc-marker"
    marker.parent.mkdir(exist_ok=True)
    async with in_memory("shell_exec", workspace, policy=policy) as client:
        with anyio.fail_after(60):
            plain = await client.call_tool("shell_exec", {"command": f"touch '{marker}'"})
        assert plain.is_error and not marker.exists()
        with anyio.fail_after(60):
            result = await client.call_tool(
                "shell_exec", {"command": "make hello", "env": {"CC": f"touch '{marker}' #"}}
            )
    assert result.is_error and not marker.exists(), (result.structured_content, marker.exists())
