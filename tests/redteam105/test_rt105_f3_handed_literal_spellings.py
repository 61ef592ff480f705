"""Red team 105 F3: a denied line handed to a runner as a literal in a close spelling is allowed by the rules alone
(no box): ``shell/strings/code_texts._literal`` reads ``\\N{…}`` (Python's named escapes, Perl's ``\\N{U+…}``) and
Perl's ``\\x{…}`` as the letter after the backslash, so ``echo hi\\N{SEMICOLON} <line>`` is judged one ``echo``;
other spellings (a keyword argument, implicit concatenation, a template literal) are not read as handed at all.

Lines travel as data (handed_lines.json) and are given only to ``PolicyEngine.decide``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_server_guard.policy import load_policy
from mcp_server_guard.shell.strings.rules import PolicyEngine

PLAIN = PolicyEngine(load_policy().shell_exec)
LINES: dict[str, str] = json.loads((Path(__file__).resolve().parent / "handed_lines.json").read_text())


@pytest.mark.parametrize("case", sorted(LINES))
def test_a_handed_denied_line_is_not_allowed(case: str) -> None:
    verdict = PLAIN.decide(LINES[case])
    assert verdict.action != "allow", (case, verdict)
