"""Red team 111 F1 (b): the line of F1, cancelled by the client (``notifications/cancelled``), goes on being judged on
the server's worker thread: half a core (on this loaded 2-core machine: all it gets) 30 s after the cancel. Other
calls of the session are answered meanwhile; a model that sends the line a few times, or in a few sessions, holds
the machine's cores for many minutes with nothing to show for it. Control: an idle server, the same measure. (The
watch ends at the first quiet 2 s window, at most 25 s after the cancel.)

Drives the real console script over JSON-RPC lines."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import psutil
import pytest

from support.redteam import SX, started

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")

SLOW = "echo " + "<<" * 8000


def _line(uses: int) -> str:
    return f"c='{SLOW}'; " + "; ".join(['sh -c "$c"'] * uses)


def _cpu_percent(pid: int, seconds: float) -> float:
    """The CPU the server's processes use over ``seconds``, in percent of one core."""
    server = psutil.Process(pid)
    tree = [server, *server.children(recursive=True)]
    before = {p.pid: sum(p.cpu_times()[:2]) for p in tree if p.is_running()}
    time.sleep(seconds)
    after = {p.pid: sum(p.cpu_times()[:2]) for p in tree if p.is_running()}
    return sum(after[k] - before[k] for k in after if k in before) * 100 / seconds


def _busy_after(workspace: Path, state: Path, line: str) -> tuple[float | None, float]:
    """Whether another call is answered while ``line`` is judged (seconds, None: not within 30 s), and the least
    CPU the server uses in 2 s windows over the 25 s after the line is cancelled (the first window under 20% ends
    the watch: a judging bounded to 10 s per line has stopped by then)."""
    raw = started(SX, workspace, state)
    try:
        raw.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                  "params": {"name": "shell_exec", "arguments": {"command": line, "timeoutSeconds": 10}}})  # fmt: skip
        asked = time.monotonic()
        alive = {"name": "shell_exec", "arguments": {"command": "echo alive", "timeoutSeconds": 10}}
        raw.send({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": alive})
        answered = None
        while time.monotonic() - asked < 30:
            if raw.recv(timeout=30).get("id") == 8:
                answered = time.monotonic() - asked
                break
        raw.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}})
        cancelled = time.monotonic()
        busy = _cpu_percent(raw.proc.pid, 2)
        while busy >= 20 and time.monotonic() - cancelled < 25:
            busy = _cpu_percent(raw.proc.pid, 2)
        return answered, busy
    finally:
        raw.close()


def test_control_an_idle_server_uses_no_cpu(workspace: Path, tmp_path: Path) -> None:
    answered, busy = _busy_after(workspace, tmp_path / "state", "echo quick")
    assert answered is not None
    assert busy < 20, busy


def test_a_cancelled_judging_stops(workspace: Path, tmp_path: Path) -> None:
    answered, busy = _busy_after(workspace, tmp_path / "state", _line(400))
    assert answered is not None, "the other call was not answered within 30 s"
    assert busy < 20, f"25 s after the cancel the judging goes on: the server uses {busy:.0f}% of a core"
