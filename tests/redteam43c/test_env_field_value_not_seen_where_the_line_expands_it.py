"""docs/shell_exec.md: "The call's `env` field is judged exactly as the same assignments written before the line";
rules.py ``PolicyEngine.expand`` says the same. The env field puts the variable in bash's environment, so the line's
own ``$X`` expands to the value — as after ``X=…;`` written before the line (the form tests/redteam43b compares
with). But the expander never gives the line the field's values: ``$X``, ``"$X"``, ``eval "$X"`` stay words "only
known at run time". A line whose expansion the policy denies when the assignment is written in the line is then only
asked (no copy: ``dynamic-program``, ``dynamic-eval``, ``dynamic-redirect``, ``dynamic-shell-string``, the question
showing ``$X`` and not what runs) or allowed outright (on a copy), e.g. ``rm -rf "$X"`` with ``X=/``.

Security-relevant: a deny rule (rm-recursive-force, power-off, system-write …) is passed by moving the words into the
env field. Nothing runs: verdicts are computed in-process."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from mcp_server_guard.policy import load_policy
from mcp_server_guard.shell.strings.rules import PolicyEngine

SEVERITY = {"allow": 0, "ask": 1, "deny": 2}
CASES = [
    ("$X", {"X": "rm -rf ~"}, False),
    ('eval "$X"', {"X": "rm -rf ~"}, False),
    ('sh -c "$X"', {"X": "reboot"}, False),
    ('echo hi > "$X"', {"X": "/etc/passwd"}, False),
    ('rm -rf "$X"', {"X": "/"}, True),
    ('eval "$X"', {"X": "rm -rf ~"}, True),
    ('"$X" -rf ~', {"X": "rm"}, True),
    ('cp a "$X"', {"X": "/etc/passwd"}, True),
]


@pytest.mark.parametrize(
    ("line", "env", "effects"), CASES, ids=[f"{c[0]}|{c[1]['X']}|{'copy' if c[2] else 'no-copy'}" for c in CASES]
)
def test_env_field_value_is_judged_where_the_line_expands_it(
    tmp_path: Path, line: str, env: dict[str, str], effects: bool
) -> None:
    """Expected: the env field verdict at least as strict as ``X='…'; LINE`` (deny). Observed: ask (no copy) or
    allow (on a copy)."""
    engine = PolicyEngine(load_policy().shell_exec, effects=effects, roots=[str(tmp_path)], home=str(tmp_path / "h"))
    through_field = engine.decide(line, env=env)
    in_line = engine.decide("; ".join([*(f"{k}={shlex.quote(v)}" for k, v in env.items()), line]))
    assert in_line.action == "deny", in_line
    assert SEVERITY[through_field.action] >= SEVERITY[in_line.action], (through_field, in_line)
