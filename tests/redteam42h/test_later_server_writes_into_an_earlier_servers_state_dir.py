"""Issue 42 claim 3: "every state directory any server of the user uses (copies, history, audit, approvals;
XDG_STATE_HOME differing between servers) is hidden from every server's commands; a state directory inside a root is
refused"; docs/shell_exec.md: "The default state directories — $XDG_STATE_HOME/mcp-guard … — are hidden from every
tool of every server wherever they lie".

Setup: server A (shell_exec) serves ``big/ra`` with ``XDG_STATE_HOME=big/sa`` (started first: no running server
allows ``big`` yet, so its start is not refused) and runs a background job. Server B (shell_exec, workspace-write)
then starts on ``big`` with a state directory of its own elsewhere. B's start is not refused.
Command (B): append to A's job spool file, create files in A's ``front/``, ``locks/`` and ``spool/``.
Expected: B refused to start, or all of ``big/sa/mcp-guard`` hidden from B's commands (nothing of it changes).
Observed: only ``history/``, ``copies/`` (contents) and the audit log are masked; B's command reads A's job spool
(A's command output) and B applies its writes there: A's ``spool/…/jobs/j1-….out`` modified, ``front/z``,
``locks/w``, ``spool/y`` created. ``front/<key>.json`` holds the ``initialize``/``tools/list`` answers A's next start
replays (serving/front.py), and ``locks/`` holds the tree lock every server takes.

Guessed cause: the start-up check refuses only a server whose OWN state lies in another running server's root, not
one whose root holds another's state; and the registry hides each registered state path (history, audit log,
copies area), not the whole ``$XDG_STATE_HOME/mcp-guard`` it lies in (front, locks, spool)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from support import serve
from support.boxed import Person

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

SX = "mcp-server-shell-exec"
WRITES = (
    "cd {big} && for f in sa/mcp-guard/spool/*/jobs/*.out; do echo FORGED >> $f; done; "
    "touch sa/mcp-guard/front/z sa/mcp-guard/locks/w sa/mcp-guard/spool/y"
)


def _state(sa: Path) -> dict[str, bytes]:
    return {str(p.relative_to(sa)): (p.read_bytes() if p.is_file() else b"") for p in (sa / "mcp-guard").rglob("*")
            if "copies" not in p.parts and "history" not in p.parts}  # fmt: skip


async def _sx(client: object, command: str, **kw: object) -> dict[str, Any]:
    with anyio.fail_after(90):
        result = await client.call_tool("shell_exec", {"command": command, "timeoutSeconds": 60, **kw})  # type: ignore[attr-defined]
    assert not result.is_error, result
    return dict(result.structured_content)


async def test_a_later_servers_command_cannot_write_an_earlier_servers_state(tmp_path: Path) -> None:
    big = tmp_path / "big"
    ra, sa = big / "ra", big / "sa"
    ra.mkdir(parents=True)
    async with serve(SX, ra, audit=sa / "audit-a.jsonl", env={"XDG_STATE_HOME": str(sa)},
                     elicitation_callback=Person()) as a:  # fmt: skip
        job = await _sx(a, "echo job-output; sleep 40", yieldAfterSeconds=2)
        assert job["status"] == "running", job
        before = _state(sa)
        try:
            async with serve(SX, big, audit=tmp_path / "audit-b.jsonl", env={"XDG_STATE_HOME": str(tmp_path / "sb")},
                             elicitation_callback=Person()) as b:  # fmt: skip
                out = await _sx(b, WRITES.format(big=big))
        except BaseException as exc:  # B refusing to start is an acceptable outcome
            if "another running server" in repr(exc) or "Connection closed" in repr(exc):
                return
            raise
        after = _state(sa)
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        assert not changed, f"B ({out['transaction']}: {out['changes']['summary']}) changed A's state: {changed}"
        await _sx(a, "", jobId=job["jobId"], signal="KILL")
