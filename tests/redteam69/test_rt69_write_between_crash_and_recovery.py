"""Red team 69: a shell_exec apply killed (SIGKILL) at its first step; while no shell_exec runs, a file_write server
(same user, same history) writes paths the dead apply's remaining steps will change: a file the command creates,
a file the command moves away, and the file the command rewrites. Then shell_exec starts again and finishes the
apply. Every byte file_write wrote must still be in the tree (at its name, or the command's version beside it as a
said conflict copy), and undo of the shell_exec call must never take file_write's bytes away.

Plain file operations inside the temporary root."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.two_servers import FW, SX, aged, ask, killed_at, records, start_and_end, started, undo

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")

COMMAND = "mv tree/f1.txt tree/g.txt && echo after > edit.txt && echo n > new.txt && echo z > z.txt"


def prepare(base: Path) -> tuple[Path, Path]:
    root, state = base / "root", base / "state"
    (root / "tree").mkdir(parents=True)
    state.mkdir()
    (root / "tree" / "f1.txt").write_text("f1\n")
    (root / "edit.txt").write_text("before\n")
    aged(root)
    return root, state


WRITES = {"new.txt": "written by file_write 1\n", "tree/f1.txt": "written by file_write 2\n",
          "edit.txt": "written by file_write 3\n"}  # fmt: skip


def everything(root: Path) -> dict[str, str]:
    found = {}
    for d, _dirs, files in os.walk(root):
        if ".mcp-guard" in d:
            continue
        for name in files:
            p = os.path.join(d, name)
            found[os.path.relpath(p, root)] = Path(p).read_text(errors="replace")
    return found


def test_file_writes_between_a_killed_apply_and_its_recovery_are_kept(tmp_path: Path) -> None:
    arguments = {"command": COMMAND, "timeoutSeconds": 60}
    root, state = prepare(tmp_path / "traced")
    trace = tmp_path / "trace"
    result = ask(started(SX, root, state, state / "h", {"MCP_GUARD_KILL_TRACE": str(trace)}), "shell_exec",
                 arguments, 90)  # fmt: skip
    assert result is not None and result["structuredContent"]["transaction"] == "applied", result
    steps = trace.read_text().splitlines()
    firsts = [i for i, s in enumerate(steps, 1) if s.split(" ", 1)[1].startswith("step ")]
    problems: list[str] = []
    for n in firsts:
        where = f"killed at {steps[n - 1]}"
        root, state = prepare(tmp_path / f"k{n}")
        assert ask(started(SX, root, state, state / "h", killed_at(n)), "shell_exec", arguments, 90) is None
        writer = started(FW, root, state, state / "h")
        try:
            for i, (path, content) in enumerate(WRITES.items()):
                if path == "tree/f1.txt" and not (root / path).exists():
                    continue
                res = writer.request(10 + i, "tools/call", {"name": "file_write", "arguments": {
                    "path": path, "content": content, "overwrite": True}}, timeout=60)  # fmt: skip
                if res["result"].get("isError"):
                    problems.append(f"{where}: file_write {path}: {str(res['result'])[:200]}")
        finally:
            writer.close()
        expected = {c for p, c in WRITES.items() if p != "tree/f1.txt" or c in everything(root).values()}
        start_and_end(SX, root, state, state / "h")
        now = everything(root)
        missing = sorted(c.strip() for c in expected if c not in now.values())
        if missing:
            problems.append(f"{where}: file_write's bytes gone from the tree after recovery: {missing}; tree {now}")
            continue
        calls = [k for k, v in records(state / "h").items() if v.get("tool") == "shell_exec"]
        for call in calls:
            undo(call, state, state / "h")
            now = everything(root)
            missing = sorted(c.strip() for c in expected if c not in now.values())
            if missing:
                problems.append(f"{where}: undo of the shell_exec call took file_write's bytes away: {missing}")
    assert not problems, "\n".join(problems[:20])


def test_a_file_a_step_left_before_a_crash_counts_as_ours_only_while_it_is_that_very_file(tmp_path: Path) -> None:
    """The race behind the test above's rare failure: a file the dead run placed (its ctime ours) is replaced by
    file_write before the next start; its inode number, freed, may be given to someone else's new file, which the
    rest of the run must not take for ours. The file at the recorded path must still be the one recorded."""
    from mcp_server_guard.changes.nofollow import identity
    from mcp_server_guard.changes.plan import Applied, Op
    from mcp_server_guard.changes.settling import left_as_recorded as _left_as_recorded

    root = tmp_path / "root"
    root.mkdir()
    (root / "edit.txt").write_text("placed by the dead run\n")
    record = Applied(str(root / "edit.txt"), "create", "file", after=identity(os.lstat(root / "edit.txt")))
    op = Op("place", str(root), "edit.txt")
    assert _left_as_recorded(op, record)
    (root / "edit.tmp").write_text("written by file_write\n")
    os.rename(root / "edit.tmp", root / "edit.txt")  # (the placed inode freed: its number may be reused)
    assert not _left_as_recorded(op, record)
    (root / "edit.txt").unlink()
    assert not _left_as_recorded(op, record)
