"""docs/audit.md: each call's record carries "`action` (`read`, `write`, `exec`), `target` (the path or command
line …)"; docs/agent-cli.md "Audit records": "`action` …, `target` …, `approved_by` (… `policy` otherwise)".
``mcp-guard history restore ID`` writes a file (admin/app.py ``history_restore``: an AuditRecord with only server, tool
and arguments), and its record says ``action: null``, ``target: null``, ``approved_by: null`` — the log does not
say a write happened, nor to what (``mcp-guard audit`` shows an empty action/target for it).

Nothing harmful runs: a file_write of a note, then its first version restored."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import anyio
import pytest

from support import console_script, serve

pytestmark = pytest.mark.anyio


async def test_history_restore_record_says_it_wrote_the_file(workspace: Path, tmp_path: Path) -> None:
    """Expected: the restore's record has action "write" and the restored path as target. Observed: both null."""
    log = tmp_path / "audit.jsonl"
    async with serve("mcp-server-file-write", workspace, audit=log) as client:
        with anyio.fail_after(60):
            for content in ("first\n", "second\n"):
                result = await client.call_tool("file_write", {"path": "n.txt", "content": content, "overwrite": True})
                assert not result.is_error, result
    backup = result.structured_content["backup"]
    done = subprocess.run(
        [console_script("mcp-guard"), "history", "restore", backup, "--audit-log", str(log)],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (workspace / "n.txt").read_text() == "first\n"
    records = [json.loads(line) for line in log.read_text().splitlines()]
    restore = [r for r in records if r.get("tool") == "history.restore"]
    assert restore, records
    assert all(r.get("action") == "write" and r.get("target") for r in restore), restore
