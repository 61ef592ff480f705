"""The real servers killed (SIGKILL, through the fault points of ``mcp_server_guard.faults``) at every step of a
file_write and at steps of a shell_exec apply, then started again: nothing is lost, the file is the old one or the
new one, and a call that landed has a record ``mcp-guard undo`` finds and undoes exactly."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support import RawClient, console_script
from support.fidelity import differences, snapshot
from support.two_servers import OLD_NS, ask, killed_at, project, records

FW = "mcp-server-file-write"
SX = "mcp-server-shell-exec"


def started(server: str, root: Path, state: Path, env: dict[str, str] | None = None) -> RawClient:
    args = [console_script(server), "--allow-path", str(root), "--audit-log", str(state / "audit.jsonl"),
            "--history-dir", str(state / "history")]  # fmt: skip
    raw = RawClient(args, root, env={**os.environ, **(env or {})}, stderr=state / f"{server}.err")
    raw.initialize()
    return raw


def undo(audit_id: str, state: Path, *history: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [console_script("mcp-guard"), "undo", audit_id, "--audit-log", str(state / "audit.jsonl"), *history],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_file_write_killed_at_any_step_leaves_old_or_new_and_a_record_undo_finds(tmp_path: Path) -> None:
    def prepare(base: Path) -> tuple[Path, Path]:
        root, state = base / "root", base / "state"
        root.mkdir(parents=True)
        state.mkdir()
        (root / "hello.txt").write_text("old\n")
        (root / "hello.txt").chmod(0o640)
        os.utime(root / "hello.txt", ns=(OLD_NS, OLD_NS))
        return root, state

    arguments = {"path": "hello.txt", "content": "new\n", "overwrite": True}
    root, state = prepare(tmp_path / "traced")
    trace = tmp_path / "trace"
    raw = started(FW, root, state, {"MCP_GUARD_KILL_TRACE": str(trace)})
    result = ask(raw, "file_write", arguments)
    assert result is not None and not result.get("isError"), result
    steps = trace.read_text().splitlines()
    assert any(" write " in f" {s} " for s in steps), steps
    problems: list[str] = []
    for n in range(1, len(steps) + 1):
        where = f"killed at {steps[n - 1]}"
        root, state = prepare(tmp_path / f"k{n}")
        before = snapshot(root)
        if ask(started(FW, root, state, killed_at(n)), "file_write", arguments) is not None:
            problems.append(f"{where}: the server answered")
            continue
        started(FW, root, state).close()  # the next start: its clean-up
        text = (root / "hello.txt").read_text()
        left = sorted(p.name for p in root.iterdir() if p.name != "hello.txt")
        if left:
            problems.append(f"{where}: left in the project: {left}")
        landed = {i: r for i, r in records(state / "history").items() if not r.get("pending") or text == "new\n"}
        if text == "old\n":
            problems += [f"{where}: {d}" for d in differences(before, snapshot(root))]
            for audit_id in landed:
                done = undo(audit_id, state, "--history-dir", str(state / "history"))
                if done.returncode == 0:
                    problems.append(f"{where}: undo of a write that never landed says it undid it")
            continue
        if text != "new\n" or len(landed) != 1:
            problems.append(f"{where}: hello.txt holds {text!r}; records {sorted(landed)}")
            continue
        done = undo(next(iter(landed)), state, "--history-dir", str(state / "history"))
        if done.returncode != 0:
            problems.append(f"{where}: undo failed: {done.stderr[-300:]}")
            continue
        problems += [f"{where}: after undo: {d}" for d in differences(before, snapshot(root))]
    assert not problems, "\n".join(problems)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
def test_a_shell_exec_apply_killed_midway_is_finished_by_the_next_start_and_undoes_exactly(tmp_path: Path) -> None:
    def prepare(base: Path) -> tuple[Path, Path]:
        return project(base)

    command = (
        "rm tree/sub/f0.txt && mv tree/sub/f1.txt tree/g.txt && echo after > edit.txt && mkdir made && "
        "echo m > made/m.txt && chmod 600 edit.txt"
    )
    arguments = {"command": command, "timeoutSeconds": 60}
    root, state = prepare(tmp_path / "traced")
    trace = tmp_path / "trace"
    result = ask(started(SX, root, state, {"MCP_GUARD_KILL_TRACE": str(trace)}), "shell_exec", arguments, 90)
    assert result is not None and result["structuredContent"]["transaction"] == "applied", result
    after = snapshot(root)
    steps = trace.read_text().splitlines()
    # The first step, a pre-image's metadata written before its data moves, the call's record, the journal's end.
    chosen = [i for i, s in enumerate(steps, 1) if s.split(" ", 1)[1].startswith(("step 0 ", "history data", "record"))]
    chosen = sorted({chosen[0], chosen[1], chosen[-1], len(steps)})
    problems: list[str] = []
    for n in chosen:
        where = f"killed at {steps[n - 1]}"
        root, state = prepare(tmp_path / f"k{n}")
        before = snapshot(root)
        if ask(started(SX, root, state, killed_at(n)), "shell_exec", arguments, 90) is not None:
            problems.append(f"{where}: the server answered")
            continue
        started(SX, root, state).close()  # the next start finishes the apply
        diff = differences(after, snapshot(root))
        if diff:
            problems += [f"{where}: not all new: {d}" for d in diff[:5]]
            continue
        landed = list(records(state / "history"))
        done = undo(landed[0], state, "--history-dir", str(state / "history")) if len(landed) == 1 else None
        if done is None or done.returncode != 0:
            problems.append(f"{where}: undo failed: {done.stderr[-300:] if done else landed}")
            continue
        problems += [f"{where}: after undo: {d}" for d in differences(before, snapshot(root))]
    assert not problems, "\n".join(problems)


def test_an_undo_killed_at_any_step_is_finished_by_the_next_undo(tmp_path: Path) -> None:
    root, state = tmp_path / "root", tmp_path / "state"
    root.mkdir()
    state.mkdir()
    history = ["--history-dir", str(state / "history")]
    writer = started(FW, root, state)
    try:

        def written(name: str) -> tuple[str, Any]:
            (root / name).write_text("old\n")
            os.utime(root / name, ns=(OLD_NS, OLD_NS))
            before = snapshot(root)
            arguments = {"path": name, "content": "new\n", "overwrite": True}
            result = writer.request(
                len(before.entries) + 10, "tools/call", {"name": "file_write", "arguments": arguments}
            )
            assert not result["result"].get("isError"), result
            return str(result["result"]["structuredContent"]["auditId"]), before

        def undo_killed(call: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [console_script("mcp-guard"), "undo", call, "--audit-log", str(state / "audit.jsonl"), *history],
                env={**os.environ, **env}, capture_output=True, text=True, timeout=60,
            )  # fmt: skip

        call, _before = written("traced.txt")
        trace = tmp_path / "trace"
        assert undo_killed(call, {"MCP_GUARD_KILL_TRACE": str(trace)}).returncode == 0
        steps = trace.read_text().splitlines()
        problems: list[str] = []
        for n in range(1, len(steps) + 1):
            where = f"undo killed at {steps[n - 1]}"
            call, before = written(f"a{n}.txt")
            killed = undo_killed(call, killed_at(n))
            if killed.returncode != -9:
                problems.append(f"{where}: not killed there ({killed.returncode})")
                continue
            again = undo(call, state, *history)
            if again.returncode != 0:
                problems.append(f"{where}: the next undo failed: {again.stderr[-300:]}")
                continue
            problems += [f"{where}: after the next undo: {d}" for d in differences(before, snapshot(root))]
    finally:
        writer.close()
    assert not problems, "\n".join(problems)
