"""rules.py ``PolicyEngine.expand``: a value of the env field holding ``$(``/backticks is a ``code-in-data`` finding
and then the *whole value* is judged as a command line (``expander.line(value, 1)``), not just the commands inside
the substitution. What must hold (the brief): the env field is judged exactly as the same assignment written before
the line. A commit message or any prose that starts with a word naming a refused program (``reboot``, ``shutdown``,
``rm -rf``, ``sudo``) and mentions a `$(…)`/backtick is then refused or asked by a rule about that program; on a copy
a value that is no valid shell (an apostrophe, JSON) is a ``parse-error``. The same assignment in the line is
``code-in-data`` only (asked without a copy, judged by effects on a copy).

Nothing runs: the verdicts are computed in-process."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from mcp_server_guard.policy import load_policy
from mcp_server_guard.shell.strings.rules import PolicyEngine

MESSAGES = {
    "reboot-prose": "reboot loop fixed: see `cfg` docs",
    "shutdown-prose": "shutdown handler no longer calls $(date)",
    "rm-rf-prose": "rm -rf build is now done by $(make clean)",
    "apostrophe": "don't break `foo`",
    "json": '{"cmd": "$(date)"}',
}


FAILING = [("reboot-prose", False), ("reboot-prose", True), ("shutdown-prose", False), ("shutdown-prose", True),
           ("rm-rf-prose", False), ("apostrophe", True), ("json", True)]  # fmt: skip


@pytest.mark.parametrize(("case", "effects"), FAILING, ids=[f"{c}-{'on-copy' if e else 'no-copy'}" for c, e in FAILING])
def test_env_message_is_judged_as_the_same_assignment_in_the_line(tmp_path: Path, case: str, effects: bool) -> None:
    """``git commit -m "$MSG"`` with MSG from the env field vs ``MSG='…'; git commit -m "$MSG"``. Expected: the same
    action and rule. Observed: the env field is denied by power-off / rm-recursive-force (no copy), or asked for
    parse-error / privilege-escalation (on a copy) where the line form is code-in-data (ask) or allowed."""
    engine = PolicyEngine(load_policy().shell_exec, effects=effects, roots=[str(tmp_path)], home=str(tmp_path))
    message = MESSAGES[case]
    through_field = engine.decide('git commit -m "$MSG"', env={"MSG": message})
    in_line = engine.decide(f'MSG={shlex.quote(message)}; git commit -m "$MSG"')
    assert (through_field.action, through_field.rule) == (in_line.action, in_line.rule), (through_field, in_line)
