"""Red team 159 F2 (LOW): a command of server B re-modes the directory that holds server A's state (``big/sa``: A's
``XDG_STATE_HOME`` with its audit log, history and copies; B serves ``big``). No question is asked ("change the
mode of sa/ to 0000") and it lands. From then on A's every call that changes a file ends ``failed`` ("its changes
could not be read (Permission denied)"), A cannot clean up at exit, and ``mcp-guard undo`` of A's earlier call
exits 1 (Permission denied on its call record) until the user finds and undoes B's call. docs/security.md: "Every
server's state is out of every server's reach" — the state's entries are hidden and refused by name, but not the
mode of the directory above them.

Answered (``refusals._state_locked``): a mode change taking the owner's rights from a directory that holds a
server's state or the registry is refused.

Control: the same command on a sibling directory that holds nothing of A's: A's next call applies and A's first
call undoes. Run as a user (no CAP_DAC_OVERRIDE; as root a mode stops nothing). Lines travel as data."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from support import console_script, serve
from support.as_a_user import again_as_a_user, as_a_user
from support.boxed import Person

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

SX = "mcp-server-shell-exec"
LINES: dict[str, str] = json.loads((Path(__file__).resolve().parent / "rt159_f2_state_parent.json").read_text())


async def _sx(client: Any, command: str, **kw: Any) -> dict[str, Any]:
    with anyio.fail_after(90):
        result = await client.call_tool("shell_exec", {"command": command, "timeoutSeconds": 60, **kw})
    assert not result.is_error, result
    return dict(result.structured_content)


def _undo(audit_id: str, sa: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([console_script("mcp-guard"), "undo", audit_id], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "XDG_STATE_HOME": str(sa)}, check=False)  # fmt: skip


@as_a_user
@pytest.mark.parametrize("case", ["lock_dir_holding_a_state", "control_lock_a_sibling_dir"])
async def test_outer_servers_command_keeps_the_inner_server_working(tmp_path: Path, case: str) -> None:
    big = tmp_path / "big"
    ra, sa = big / "ra", big / "sa"
    ra.mkdir(parents=True)
    (big / "elsewhere").mkdir()
    (ra / "notes.txt").write_text("the user's notes\n")
    person = Person(False)
    async with serve(SX, ra, audit=sa / "audit-a.jsonl", env={"XDG_STATE_HOME": str(sa)},
                     elicitation_callback=person) as a:  # fmt: skip
        first = await _sx(a, LINES["a_first"], cwd=str(ra))
        assert first["transaction"] == "applied", first
        async with serve(SX, big, audit=tmp_path / "audit-b.jsonl", env={"XDG_STATE_HOME": str(tmp_path / "sb")},
                         elicitation_callback=person) as b:  # fmt: skip
            locked = await _sx(b, LINES[case], cwd=str(big))
        second = await _sx(a, LINES["a_second"], cwd=str(ra))
    undone = _undo(str(first["auditId"]), sa)
    for d in (sa, big / "elsewhere"):
        d.chmod(0o755)
    report = {
        "b": (locked.get("transaction"), dict(locked.get("changes") or {}).get("summary")),
        "a_second": (second.get("transaction"), dict(second.get("changes") or {}).get("reason")),
        "undo": (undone.returncode, undone.stderr[-300:]),
        "questions": person.questions,
    }
    assert second.get("transaction") == "applied" and undone.returncode == 0, report


def test_f2_as_a_user(tmp_path: Path) -> None:
    again_as_a_user(__file__, tmp_path)
