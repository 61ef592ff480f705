"""Every result and audit record names what really happened (docs/shell_exec.md "Asking"; issue 43): a change set
the person declined is ``ask-declined`` in the result's ``policyDecision`` and in the audit record, which names the
person as the decider; one approved is ``ask-approved``; ``mcp-guard audit --decision`` finds either, and refuses a
value that is no policy result."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from support import console_script
from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


def _audit(log: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([console_script("mcp-guard"), "audit", "--audit-log", str(log), *args],
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip


@pytest.mark.parametrize(("answer", "decision"), [(False, "ask-declined"), (True, "ask-approved")])
async def test_a_change_set_the_person_answered_says_who_decided(workspace: Path, answer: bool, decision: str) -> None:
    person = Person(answer=answer)
    async with shell(workspace, person) as client:
        out = await run(client, "rm -r sub")
    assert person.questions, "deleting a tree asks first"
    assert out["policyDecision"] == decision, out
    assert out["transaction"] == ("applied" if answer else "declined"), out
    assert (workspace / "sub").exists() is not answer
    log = workspace.parent / "audit.jsonl"
    shown = _audit(log, "--decision", decision, "--json")
    entries = [json.loads(line) for line in shown.stdout.splitlines()]
    mine = [e for e in entries if e.get("audit_id") == out["auditId"]]
    assert mine and mine[0]["approved_by"] == "human:elicitation", shown.stdout


def test_a_decision_filter_that_is_no_policy_result_is_refused(tmp_path: Path) -> None:
    shown = _audit(tmp_path / "audit.jsonl", "--decision", "bogus")
    assert shown.returncode == 2 and "ask-declined" in shown.stderr, shown
    shown = _audit(tmp_path / "audit.jsonl", "--server", "shell-exec")
    assert shown.returncode == 2 and "shell_exec" in shown.stderr, shown
