"""Doc sentences that state what a result says, checked against the code that says it.

* docs/agent-cli.md "The facts on every result": ``policyDecision`` is "`allow`, `ask-approved` …, `deny` …,
  `ask-declined` …, `ask-unavailable` …, or `error`". A call covered by a session grant returns
  ``policyDecision: "approved-session"`` (shell/approval.py ``consent``; docs/shell_exec.md "A covered call …
  `policyDecision: "approved-session"`"), a value the reference table (and the output schema's description of the
  field, which the model reads) never names.
* docs/errors.md: "`READ_ONLY_MODE` | SECURITY | file_write: the server runs with `--mode read-only`; nothing is
  written". shell_exec raises READ_ONLY_MODE too (shell/execution.py ``_decide``: "This session is read-only …
  restart the server with --mode workspace-write"); the table says only file_write does."""

from __future__ import annotations

import re
from pathlib import Path

from mcp_server_guard.serving.tools import ToolOutput

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_agent_cli_facts_table_names_approved_session() -> None:
    """Expected: the policyDecision row lists approved-session. Observed: it lists six values, not that one."""
    lines = (DOCS / "agent-cli.md").read_text().splitlines()
    row = next(line for line in lines if line.startswith("| `policyDecision`"))
    assert "approved-session" in row, row


def test_output_schema_policy_decision_names_approved_session() -> None:
    """Expected: the field description a model reads names every value a success can carry. Observed: "allow …;
    ask-approved or ask-declined …; ask-unavailable …" only."""
    description = ToolOutput.model_fields["policyDecision"].description or ""
    assert "approved-session" in description, description


def test_errors_table_read_only_mode_names_shell_exec() -> None:
    """Expected: the READ_ONLY_MODE row says shell_exec refuses with it too. Observed: "file_write: …" only."""
    row = next(line for line in (DOCS / "errors.md").read_text().splitlines() if line.startswith("| `READ_ONLY_MODE`"))
    assert re.search(r"shell_exec", row), row
