"""Red team 103 F4 (LOW/MEDIUM): a command line handed to a runner as a literal, in spellings the code readers
(``shell/strings/code_texts``: ``_CODE_RUNS`` / ``_handed`` / ``_literal``) did not take as that literal: each was
``allow`` plainly (no box), while the same line handed as a plain literal is denied. Now each is judged (the line
itself, or built at run time), and the same spellings of harmless lines stay allowed.

- the literal in parentheses: ``os.system(("<line>"))``, ``execSync(("<line>"))``, and the JavaScript comma
  operator, which hands the *last* operand: ``execSync(("echo hi", "<line>"))`` (also with a join first);
- a triple-quoted literal: ``os.system(\"\"\"<line>\"\"\")``;
- a join whose item holds an escape (red team 102's LOW note, still open): ``"\\x3b rm …"`` is ``; rm …`` in Python.

(A variable handed on, ``os.system(c)``, is allowed too: a limit of the design. These are not variables: the line is
a literal right there, which the reader is meant to judge.)

Lines are Python string literals given only to ``PolicyEngine.decide``.
"""

from __future__ import annotations

import pytest

from mcp_server_guard.policy import load_policy
from mcp_server_guard.shell.strings.rules import PolicyEngine

PLAIN = PolicyEngine(load_policy().shell_exec)
DENIED = "rm -rf ~"

LINES = [
    "python3 -c 'import os; os.system((\"" + DENIED + "\"))'",
    "python3 -c 'import subprocess; subprocess.run((\"" + DENIED + "\"), shell=True)'",
    'node -e \'require("child_process").execSync(("' + DENIED + "\"))'",
    'node -e \'require("child_process").execSync(("echo hi", "' + DENIED + "\"))'",
    'node -e \'require("child_process").execSync((["echo","hi"].join(" "), "' + DENIED + "\"))'",
    'python3 -c \'import os; os.system("""' + DENIED + '""")\'',
    'python3 -c \'import os; os.system(" ".join(["echo", "\\x3b ' + DENIED + "\"]))'",
]


def test_control_the_plain_literal_is_denied() -> None:
    assert PLAIN.decide("python3 -c 'import os; os.system(\"" + DENIED + "\")'").action == "deny"


@pytest.mark.parametrize("line", LINES)
def test_a_handed_literal_in_another_spelling_is_not_allowed(line: str) -> None:
    verdict = PLAIN.decide(line)
    assert verdict.action != "allow", ("the line a runner is handed as a literal was not judged", line, verdict)


HARMLESS = [
    "python3 -c 'import os; os.system((\"ls -la\"))'",
    'python3 -c \'import os; os.system("""ls -la""")\'',
    "python3 -c 'import subprocess; subprocess.run((\"ls -la\"), shell=True)'",
    'python3 -c \'import os; os.system(" ".join(["printf", "a\\\\tb"]))\'',
]


@pytest.mark.parametrize("line", HARMLESS)
def test_harmless_lines_in_those_spellings_stay_allowed(line: str) -> None:
    assert PLAIN.decide(line).action == "allow", line


def test_an_escaped_newline_in_a_literal_separates_commands() -> None:
    line = "python3 -c 'import os; os.system(\"echo hi\\n" + DENIED + "\")'"
    assert PLAIN.decide(line).action == "deny", line
