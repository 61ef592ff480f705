"""Red team 118 F1: a command's output costs the server far more memory than ``maxOutputBytes`` per stream.

docs/shell_exec.md ("Processes"): "stdout and stderr are read concurrently into bounded buffers that keep the head
and the tail; a 1 GB flood costs the server no more than ``maxOutputBytes`` per stream." The tail is kept as a deque
of the chunks each read() returned (``shell/output.py`` ``OutputBuffer.feed``), bounded by their bytes, not their
count: a command that writes one byte per write(), paced so that each read() gets a few bytes, makes every kept byte
of the tail cost a Python ``bytes`` object and a deque slot (~48 bytes). With ``maxOutputBytes`` = 16 MiB (the
policy's cap) the server's RSS grows by hundreds of MB during one call (about 2 MB a second here, for up to the
300 s timeout; every concurrent call adds its own), against the 32 MiB the doc promises.

Control: the same command writing the same kind of output in 64 KiB writes keeps the server's RSS growth within
the bound. A person declines every question (none is asked). Drives the real console script over JSON-RPC lines.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import psutil
import pytest

from support.redteam import SX, call, started

# Two 100-s commands: run with RT118_LONG=1 (tests/shell/test_output_buffer_units.py checks the same in-process).
pytestmark = [
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing"),
    pytest.mark.skipif(not os.environ.get("RT118_LONG"), reason="110 s of output: RT118_LONG=1 runs it"),
]

MAX_OUTPUT = 16 << 20  # the policy's cap (max_output_bytes)
DURATION = 100.0  # seconds of output after the first 9 MB of each stream
BOUND = 2 * (2 * MAX_OUTPUT)  # twice what the doc promises for the two streams


def _growth_while_running(workspace: Path, state: Path, mode: str) -> tuple[int, dict[str, object]]:
    """The most the server's RSS grew above its idle size while the writer ran (not while its reply was made)."""
    (workspace / "writer.py").write_bytes((Path(__file__).parent / "writer.py").read_bytes())
    raw = started(SX, workspace, state)
    try:
        call(raw, 2, "shell_exec", {"command": "echo warm", "timeoutSeconds": 20})
        server = psutil.Process(raw.proc.pid)
        idle = server.memory_info().rss
        arguments = {"command": f"python3 writer.py {mode} {DURATION}", "timeoutSeconds": DURATION + 120,
                     "maxOutputBytes": MAX_OUTPUT}  # fmt: skip
        raw.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                  "params": {"name": "shell_exec", "arguments": arguments}})  # fmt: skip
        began = time.monotonic()
        peak = idle
        while time.monotonic() - began < DURATION - 5:  # the writer runs: only the kept output is held
            peak = max(peak, server.memory_info().rss)
            time.sleep(1)
        while True:
            message = raw.recv(timeout=DURATION + 180)
            if message.get("id") == 3:
                break
        return peak - idle, dict(message["result"].get("structuredContent") or {})
    finally:
        raw.close()


def test_control_output_in_large_writes_stays_within_the_bound(workspace: Path, tmp_path: Path) -> None:
    grew, result = _growth_while_running(workspace, tmp_path / "state", "bulk")
    assert result.get("truncated") is True, result.get("stdoutBytes")
    assert grew < BOUND, f"RSS grew {grew >> 20} MiB"


def test_output_in_one_byte_writes_costs_many_times_max_output_bytes(workspace: Path, tmp_path: Path) -> None:
    grew, result = _growth_while_running(workspace, tmp_path / "state", "trickle")
    assert result.get("truncated") is True, result.get("stdoutBytes")
    assert grew < BOUND, (
        f"the server's RSS grew {grew >> 20} MiB while one command wrote {result.get('stdoutBytes')} + "
        f"{result.get('stderrBytes')} bytes with maxOutputBytes = {MAX_OUTPUT >> 20} MiB (the doc: no more than "
        f"maxOutputBytes per stream, {2 * MAX_OUTPUT >> 20} MiB)"
    )
