"""The cyclic garbage collector held off while a server starts (``serving.collector``, issue 44).

From the start-up front's start to its first call's answer (or the SDK's taking the wire, or a bound) the
collector does not run; then one full collection finds what the start left, and it runs as before. A process
that had turned it off keeps it off; a start without a front never holds it off.
"""

from __future__ import annotations

import gc
import os
import sys
import types
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_server_guard.serving import collector, front
from support import RawClient, console_script
from support.memory import file_tools


class _Cycle:
    """An object that only the cyclic collector frees (it refers to itself)."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture(autouse=True)
def _collector_restored(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts with the collector on and not held off, and leaves it as it found it."""
    was = gc.isenabled()
    monkeypatch.setattr(collector, "_paused_at", None)
    gc.enable()
    yield
    monkeypatch.setattr(collector, "_paused_at", None)
    if was:
        gc.enable()
    else:
        gc.disable()


def _garbage_cycle() -> weakref.ref[_Cycle]:
    """A cycle no one refers to any more: alive until a collection finds it."""
    cycle = _Cycle()
    return weakref.ref(cycle)


def test_held_off_a_cycle_stays_until_the_resume_collects_it() -> None:
    collector.pause()
    assert not gc.isenabled() and collector.paused()
    left = _garbage_cycle()
    for _ in range(3):
        [_Cycle() for _ in range(2000)]  # past every generation's threshold: no automatic collection
    assert left() is not None
    collector.resume("test")
    assert gc.isenabled() and not collector.paused()
    assert left() is None  # the one full collection found it


def test_a_resume_without_a_pause_changes_nothing() -> None:
    collector.resume("test")
    assert gc.isenabled() and not collector.paused()


def test_a_process_that_turned_the_collector_off_keeps_it_off() -> None:
    gc.disable()
    collector.pause()
    assert not collector.paused()
    collector.resume("test")
    assert not gc.isenabled()


def test_the_collector_runs_again_at_the_bound_however_long_the_first_call_takes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    collector.pause()
    collector.resume_if_due()
    assert collector.paused()  # not yet
    monkeypatch.setattr(collector, "PAUSE_BOUND_S", 0.0)
    collector.resume_if_due()
    assert gc.isenabled() and not collector.paused()


def test_a_start_without_a_front_never_holds_the_collector_off(monkeypatch: pytest.MonkeyPatch) -> None:
    # --version (and --help, a terminal): no front, so no first answer of its to wait for.
    seen: list[bool] = []
    package = types.ModuleType("perf_fake_server")
    package.__path__ = []
    cli = types.ModuleType("perf_fake_server.cli")
    cli.main = lambda argv: seen.append(gc.isenabled())  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "perf_fake_server", package)
    monkeypatch.setitem(sys.modules, "perf_fake_server.cli", cli)
    front.run_console("perf_fake_server", ["--version"])
    assert seen == [True] and not collector.paused()


def test_the_sdk_taking_the_wire_turns_the_collector_back_on(
    workspace: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wire_in, feed = os.pipe()
    answers, wire_out = os.pipe()
    running = front.Front("mcp_server_file_read", ["--launch-dir", str(workspace)], wire_in, wire_out).start()
    running.take_calls(file_tools("file_read", workspace))
    monkeypatch.setattr(front, "_running", running)
    collector.pause()
    try:
        taken, handed = front.take_front()
        assert taken is running and handed is not None
        assert gc.isenabled() and not collector.paused()
    finally:
        for fd in (wire_in, feed, answers, wire_out):
            os.close(fd)


@pytest.mark.parametrize("script", ["mcp-server-file-read", "mcp-server-shell-exec"])
def test_a_real_start_runs_the_collector_again_once_its_first_answer_is_out(
    script: str, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "a.txt").write_text("hello\n")
    err = tmp_path / "stderr.txt"
    argv = [console_script(script), "--log-level", "debug", "--audit-log", str(tmp_path / "audit.jsonl")]
    client = RawClient(argv, workspace, stderr=err)
    call: dict[str, Any] = {"name": "file_read", "arguments": {"path": "a.txt"}}
    if script == "mcp-server-shell-exec":
        call = {"name": "shell_exec", "arguments": {"command": "cat a.txt"}}
    try:
        client.initialize()
        result = client.request(1, "tools/call", call, timeout=60)["result"]
        assert not result.get("isError") and "hello" in str(result)
        client.end_input()
    finally:
        client.close()
    lines = client.stderr_lines()
    answered = [i for i, line in enumerate(lines) if "answered before the SDK loaded" in line]
    resumed = [i for i, line in enumerate(lines) if "the garbage collector runs again" in line]
    assert answered and len(resumed) == 1, lines
    assert "the first call's answer is out" in lines[resumed[0]]
    assert answered[0] < resumed[0]  # held off until then
