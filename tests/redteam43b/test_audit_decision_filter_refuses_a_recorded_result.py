"""admin/app.py ``mcp-guard audit --decision`` validates the value against audit.POLICY_RESULTS (allow,
ask-approved, ask-declined, ask-unavailable, deny, error, cancelled, input_required). What must hold: every
policy result the servers write can be filtered on. A call covered by a session approval is recorded and returned
with ``policyDecision``/``policy_result`` ``approved-session`` (shell/approval.py ``consent``; see
tests/shell/test_session_approvals.py), yet the filter refuses that value as "not a policy result"."""

from __future__ import annotations

import subprocess
from pathlib import Path

from support import console_script


def test_audit_decision_approved_session_is_refused(tmp_path: Path) -> None:
    """Expected: exit 0 (no matching entries in an empty log). Observed: exit 2, "--decision 'approved-session':
    not a policy result"."""
    log = tmp_path / "audit.jsonl"
    log.write_text("", encoding="utf-8")
    done = subprocess.run(
        [console_script("mcp-guard"), "audit", "--decision", "approved-session", "--audit-log", str(log)],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
