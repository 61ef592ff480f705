"""Red team 115 F3: a file_write killed after its rename, before its record is completed, is undone by
`mcp-guard undo` with exit 0 ("every path back exactly") while the directory's modification time stays moved.

A write's record is written ``pending`` before the rename and completed after (``write_records._record`` /
``_complete_record``); only the completion adds the ``times`` record of the directory whose time the write moved
(``_time_records``). A server killed in between (SIGKILL, an OOM kill, a power cut) leaves a pending record that
``mcp-guard undo`` finds and undoes — the file comes back — but the directory keeps the time of the write: the undo
said the tree is back exactly. (tests/servers/test_crash_points.py never looks at the directory's time.)

Control: the same write, not killed, is undone with the directory's time back. Fault points
(``MCP_GUARD_KILL_AT``) are the project's own crash-test mechanism."""

from __future__ import annotations

import os
from pathlib import Path

from support.fidelity import differences, snapshot
from support.two_servers import OLD_NS, ask, killed_at, records, started, undo

FW = "mcp-server-file-write"
ARGUMENTS = {"path": "hello.txt", "content": "new\n", "overwrite": True}


def _prepare(base: Path) -> tuple[Path, Path, Path]:
    root, state = base / "root", base / "state"
    root.mkdir(parents=True)
    state.mkdir()
    (root / "hello.txt").write_text("old\n")
    os.utime(root / "hello.txt", ns=(OLD_NS, OLD_NS))
    os.utime(root, ns=(OLD_NS, OLD_NS))
    return root, state, state / "history"


def _completion_point(tmp_path: Path) -> int:
    root, state, history = _prepare(tmp_path / "traced")
    trace = tmp_path / "trace"
    result = ask(started(FW, root, state, history, {"MCP_GUARD_KILL_TRACE": str(trace)}), "file_write", ARGUMENTS)
    assert result is not None and not result.get("isError"), result
    steps = trace.read_text().splitlines()
    landed = next(i for i, s in enumerate(steps, 1) if s.split(" ", 1)[1] == "write hello.txt")
    return next(i for i, s in enumerate(steps, 1) if i > landed and s.split(" ", 1)[1].startswith("record "))


def test_control_a_write_not_killed_is_undone_with_the_directorys_time(tmp_path: Path) -> None:
    root, state, history = _prepare(tmp_path / "k")
    before = snapshot(root)
    result = ask(started(FW, root, state, history), "file_write", ARGUMENTS)
    assert result is not None and not result.get("isError"), result
    done = undo(next(iter(records(history))), state, history)
    assert done.returncode == 0, done.stderr
    assert not differences(before, snapshot(root)), differences(before, snapshot(root))


def test_a_write_killed_before_its_record_is_completed_is_undone_with_the_directorys_time(tmp_path: Path) -> None:
    n = _completion_point(tmp_path)
    root, state, history = _prepare(tmp_path / "k")
    before = snapshot(root)
    assert ask(started(FW, root, state, history, killed_at(n)), "file_write", ARGUMENTS) is None
    started(FW, root, state, history).close()  # the next start: its clean-up
    assert (root / "hello.txt").read_text() == "new\n"
    done = undo(next(iter(records(history))), state, history)
    assert done.returncode == 0, done.stderr
    diff = differences(before, snapshot(root))
    assert not diff, f"undo said every path is back exactly, but: {diff}"
