"""Issue 43, item 2: a change set the person declined says ``ask-declined`` and its audit record names the person
(``approved_by: human:elicitation``), as ``changes/transactions.py`` settle does for a change set asked in the call. A
job's change set is *held* when the job ends (``pendingChanges``) and applied by ``{"applyChanges": id}``, whose gate
asks. What must hold: the person's no there is recorded the same way (decision ask-declined, approved_by the
person)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import anyio
import pytest

from support import console_script
from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


async def test_a_held_change_set_the_person_declined_names_the_person_in_the_audit(workspace: Path) -> None:
    """``sleep 2; rm -r sub`` as a job is held when it ends; ``applyChanges`` asks and the person says no. Expected:
    the result says ask-declined and the audit record's approved_by is human:elicitation (as for a change set asked
    in its call). Observed: tools/shell_service.py ``_held_call`` notes decision=ask-declined without approved_by, so
    the audit record does not say the person decided."""
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        started = await run(client, "sleep 2; rm -r sub", yieldAfterSeconds=1)
        assert started["status"] == "running", started
        with anyio.fail_after(60):
            while True:
                out = await run(client, "", jobId=started["jobId"], yieldAfterSeconds=10)
                if out["status"] != "running":
                    break
        assert out.get("transaction") == "held", out
        answered = await run(client, "", applyChanges=out["pendingChanges"]["id"])
    assert person.questions and (workspace / "sub").exists()
    assert answered["transaction"] == "declined" and answered["policyDecision"] == "ask-declined", answered
    shown = subprocess.run([console_script("mcp-guard"), "audit", "--audit-log", str(workspace.parent / "audit.jsonl"),
                            "--json"], capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    mine = [e for e in map(json.loads, shown.stdout.splitlines()) if e.get("audit_id") == answered["auditId"]]
    assert mine and mine[0].get("approved_by") == "human:elicitation", mine
