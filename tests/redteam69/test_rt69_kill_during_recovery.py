"""Red team 69: a shell_exec apply killed (SIGKILL, fault point n), then the next start killed again in the middle
of its start-up recovery (fault point m of that process), then a third start. The tree must be all old or all
new, and a landed call must undo exactly and redo exactly.

The command is plain file operations inside the temporary root."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.fidelity import differences, snapshot
from support.two_servers import SX, ask, killed_at, project, records, start_and_end, started, undo

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")

COMMAND = (
    "rm tree/sub/f0.txt && mv tree/sub/f1.txt tree/g.txt && echo after > edit.txt && mkdir made && "
    "echo m > made/m.txt && ln edit.txt tree/hard && chmod 600 edit.txt && mv gone/deep gone/deep2 && mv keep keep2"
)


def prepare(base: Path) -> tuple[Path, Path]:
    return project(base, more=True)


def test_a_start_killed_while_it_recovers_a_killed_apply_is_finished_by_the_next(tmp_path: Path) -> None:
    arguments = {"command": COMMAND, "timeoutSeconds": 60}
    root, state = prepare(tmp_path / "traced")
    trace = tmp_path / "trace"
    result = ask(started(SX, root, state, state / "h", {"MCP_GUARD_KILL_TRACE": str(trace)}), "shell_exec",
                 arguments, 90)  # fmt: skip
    assert result is not None and result["structuredContent"]["transaction"] == "applied", result
    after = snapshot(root)
    steps = trace.read_text().splitlines()
    firsts = [i for i, s in enumerate(steps, 1) if " step " in f" {s.split(' ', 1)[1]}"]
    # (RT69_EVERY_WALK=1: three kill points of the apply and every one of their recoveries', about 5 min; else one
    # of each, a third of the way in)
    every = os.environ.get("RT69_EVERY_WALK") == "1"
    chosen = sorted({firsts[len(firsts) // 3], firsts[2 * len(firsts) // 3], firsts[-1]}) if every else [
        firsts[len(firsts) // 3]]  # fmt: skip
    problems: list[str] = []
    for n in chosen:
        # how many fault points the recovery of an apply killed at n passes
        root, state = prepare(tmp_path / f"t{n}")
        assert ask(started(SX, root, state, state / "h", killed_at(n)), "shell_exec", arguments, 90) is None
        rtrace = tmp_path / f"rtrace{n}"
        started(SX, root, state, state / "h", {"MCP_GUARD_KILL_TRACE": str(rtrace)}).close()
        rsteps = rtrace.read_text().splitlines() if rtrace.exists() else []
        for m in range(1, len(rsteps) + 1) if every else sorted({max(1, len(rsteps) // 3), len(rsteps)}):
            where = f"apply killed at {steps[n - 1]}, recovery killed at {rsteps[m - 1]}"
            root, state = prepare(tmp_path / f"k{n}-{m}")
            before = snapshot(root)
            assert ask(started(SX, root, state, state / "h", killed_at(n)), "shell_exec", arguments, 90) is None
            start_and_end(SX, root, state, state / "h", killed_at(m))
            start_and_end(SX, root, state, state / "h")
            now = snapshot(root)
            if not differences(before, now):
                continue
            diff = differences(after, now)
            if diff:
                problems += [f"{where}: neither all old nor all new: {d}" for d in diff[:4]]
                continue
            landed = [k for k, v in records(state / "h").items() if v.get("tool") == "shell_exec"]
            if len(landed) != 1:
                problems.append(f"{where}: records {landed}")
                continue
            done = undo(landed[0], state, state / "h")
            if done.returncode != 0:
                problems.append(f"{where}: undo failed: {done.stderr[-300:]}")
                continue
            problems += [f"{where}: after undo: {d}" for d in differences(before, snapshot(root))[:4]]
    assert not problems, "\n".join(problems[:30])
