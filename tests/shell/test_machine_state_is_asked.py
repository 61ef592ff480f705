"""Without the box the string rules are the only guard: state of the machine that is not a file of the project — a
database server's data, the user's terminal sessions and the programs a process manager runs, git's reflog, virtual
machines, the keys an agent or a keyring holds, desktop settings, the clock, the trash, scheduled jobs, a hosting
platform's apps — is asked about before a command changes it (red team 179's leads: these ran with no question).
The same programs' everyday reading lines stay allowed. The lines travel as data (tests/corpus/machine_state.json).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_server_guard.policy import load_policy
from mcp_server_guard.shell.strings.rules import PolicyEngine

_POLICY = load_policy().shell_exec
PLAIN = PolicyEngine(_POLICY, home="/home/u", roots=("/home/u/proj",))


def _lines(kind: str) -> list[str]:
    text = (Path(__file__).parent.parent / "corpus" / "machine_state.json").read_text(encoding="utf-8")
    return list(json.loads(text)[kind])


@pytest.mark.parametrize("line", _lines("asked_without_the_box"))
def test_attack_machine_state_changed_without_the_box_is_asked(line: str) -> None:
    verdict = PLAIN.decide(line)
    assert verdict.action in ("ask", "deny"), (line, verdict)


@pytest.mark.parametrize("line", _lines("everyday_not_asked"))
def test_the_same_programs_everyday_lines_are_not_asked(line: str) -> None:
    verdict = PLAIN.decide(line)
    assert verdict.action == "allow", (line, verdict)
