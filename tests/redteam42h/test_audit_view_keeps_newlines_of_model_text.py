"""Issue 42 claim 9: "Text from a command, a path or a model that reaches a person (errors, summaries, questions, audit
output, ``mcp-guard history/audit --json``) has control … characters escaped"; admin/format.py: ``mcp-guard audit``
shows "One call … as one readable line".

Setup: a shell_exec server. Calls (model text only): a background job whose command holds a newline (an ordinary
multi-line command line) followed by a fake audit line, then a look at a job id that does not exist (the refusal's
message lists the running jobs with their commands); and a client whose ``clientInfo.name`` holds a newline.
Expected: ``mcp-guard audit`` prints one line per call, the newline shown as ``\\n``.
Observed: the JOB_NOT_FOUND entry's reason and every entry's ``by=`` carry the newline raw: the view shows a forged
line ``2026-01-01T00:00:00.000  shell_exec allow … id=000000000000 …`` that no call wrote (``--json`` is fine).

Guessed cause: ``admin/format.format_entry`` passes the line through ``paths.readable``, which keeps newlines and
tabs (it is meant for multi-line output); the reason (an error message quoting the model's command) and the actor are
interpolated unescaped."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from support import RawClient, console_script
from support.redteam import mcp_guard

FAKE = "2026-01-01T00:00:00.000  shell_exec allow                                -      1.0ms  id=000000000000"


def _call(raw: RawClient, id_: int, arguments: dict[str, Any]) -> dict[str, Any]:
    raw.send({"jsonrpc": "2.0", "id": id_, "method": "tools/call",
              "params": {"name": "shell_exec", "arguments": arguments}})  # fmt: skip
    return raw.until(id_, timeout=60)[-1]


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
@pytest.mark.parametrize("via", ["job-command", "client-name"])
def test_one_line_per_call_whatever_the_model_wrote(workspace: Path, tmp_path: Path, via: str) -> None:
    audit = tmp_path / "audit.jsonl"
    raw = RawClient([console_script("mcp-server-shell-exec"), "--audit-log", str(audit)], workspace)
    name = f"agent\n{FAKE} by=x  exec 'nothing'" if via == "client-name" else "agent"
    try:
        raw.request(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                      "clientInfo": {"name": name, "version": "1"}})  # fmt: skip
        raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        _call(raw, 1, {"command": f"sleep 20\n# {FAKE}", "yieldAfterSeconds": 1})
        _call(raw, 2, {"command": "", "jobId": "j7"})  # JOB_NOT_FOUND: "Jobs now: j1 (running: <command>)"
        _call(raw, 3, {"command": "", "jobId": "j1", "signal": "KILL"})
    finally:
        raw.close()
    shown = mcp_guard("audit", "--audit-log", str(audit), "-n", "50").stdout
    forged = [line for line in shown.splitlines() if line.lstrip("# ").startswith("2026-01-01T00:00:00.000")]
    assert not forged, f"`mcp-guard audit` shows a line no call wrote:\n{shown}"
