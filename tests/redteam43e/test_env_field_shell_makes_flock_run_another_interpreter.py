"""docs/shell_exec.md / rules.py ``PolicyEngine.expand``: the env field "is judged as the same values exported before
the line", and environment.py: "*command-valued* names … hold a command line that some program runs: the value is
judged as a command line". ``SHELL`` is not in any table, yet ``flock LOCK -c TEXT`` and ``script -c TEXT`` run
``$SHELL -c TEXT`` (util-linux reads SHELL). The engine looks through ``flock -c``/``script -c`` as a *shell* string.

So ``env: {"SHELL": "/usr/bin/python3"}`` with ``flock L -c POLYGLOT`` (text that sh reads as ``_=…; echo hello '…'``
and Python reads as ``import os; os.system("touch M")``) is judged as an echo (allowed), while python3 runs the
payload. The same program written plainly, ``python3 -c POLYGLOT``, is denied by a rule denying ``touch``.
A line assignment ``SHELL=/usr/bin/python3 flock …`` passes the same way.

Harmful text only travels as data; the payload is a ``touch`` of a marker in the test's tmp dir."""

from __future__ import annotations

import shlex
from pathlib import Path

import anyio
import pytest

from mcp_server_guard.policy import load_policy
from mcp_server_guard.shell.strings.rules import PolicyEngine
from support import in_memory

SEVERITY = {"allow": 0, "ask": 1, "deny": 2}
POLICY = '[[shell_exec.rules]]\nid = "no-touch"\naction = "deny"\nreason = "no touching"\nprograms = ["touch"]\n'


def _polyglot(marker: Path) -> str:
    # sh:     _=$'\n' ; echo hello '<python line>'
    # python: _ = "\n'\necho hello " ; import os; os.system("touch MARKER")  # comment
    return f"_='''\n'\necho hello '''\nimport os; os.system(\"touch {marker}\") #'\n"


def _engine(tmp_path: Path) -> PolicyEngine:
    policy = tmp_path / "p.toml"
    policy.write_text(POLICY, encoding="utf-8")
    return PolicyEngine(load_policy(policy).shell_exec, roots=[str(tmp_path)], home=str(tmp_path / "h"))


@pytest.mark.parametrize(
    ("line", "env"),
    [
        ("flock {lock} -c {code}", {"SHELL": "/usr/bin/python3"}),
        ("SHELL=/usr/bin/python3 flock {lock} -c {code}", None),
        ("script -q -c {code} /dev/null", {"SHELL": "/usr/bin/python3"}),
    ],
    ids=["flock-env-field", "flock-line-assignment", "script-env-field"],
)
def test_shell_variable_hides_the_interpreter_flock_runs(tmp_path: Path, line: str, env: dict[str, str] | None) -> None:
    """Expected: no less strict than ``python3 -c POLYGLOT`` (deny no-touch). Observed: allow ('no rule matched')."""
    engine = _engine(tmp_path)
    code = shlex.quote(_polyglot(tmp_path / "M"))
    plain = engine.decide(f"python3 -c {code}")
    through = engine.decide(line.format(lock=tmp_path / "lk", code=code), env=env)
    assert plain.action == "deny", plain
    assert SEVERITY[through.action] >= SEVERITY["ask"], through


@pytest.mark.anyio
async def test_shell_env_field_lets_flock_pass_a_deny_rule(workspace: Path, tmp_path: Path) -> None:
    """``--sandbox off`` and a policy denying touch. Expected: refused, no marker. Observed: allowed, python3 runs
    ``os.system("touch M")`` and the marker exists."""
    policy = tmp_path / "p.toml"
    policy.write_text(POLICY, encoding="utf-8")
    marker = tmp_path / "outside" / "flock-marker"
    marker.parent.mkdir(exist_ok=True)
    code = shlex.quote(_polyglot(marker))
    async with in_memory("shell_exec", workspace, policy=policy) as client:
        with anyio.fail_after(60):
            plain = await client.call_tool("shell_exec", {"command": f"python3 -c {code}"})
        assert plain.is_error and not marker.exists()
        with anyio.fail_after(60):
            result = await client.call_tool(
                "shell_exec",
                {"command": f"flock {tmp_path / 'lk'} -c {code}", "env": {"SHELL": "/usr/bin/python3"}},
            )
    assert result.is_error and not marker.exists(), (result.structured_content, marker.exists())
