"""Red team 69: two shell_exec servers of one user on one root, each with a history of its own (``--history-dir``),
sharing the copies' area (the same state directory). Server A is killed (SIGKILL, a fault point) in the middle of
an apply: its journal (in A's history) names the upper files it still needs, in A's part of the area. Server B
starts on the same root: its recover() reads only B's history, then ``CopyArea.sweep`` removes every dead part of
the area -- A's too, with the files A's journal still needs. When A starts again it cannot finish its apply.

Promise (issue 40): a kill -9 of the server at any moment loses nothing; the tree is all old or all new.
The command is plain file operations inside the temporary root."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from support.fidelity import differences, snapshot
from support.two_servers import SX, ask, killed_at, project, records, started, undo

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")

COMMAND = (
    "rm tree/sub/f0.txt && mv tree/sub/f1.txt tree/g.txt && echo after > edit.txt && mkdir made && "
    "echo m > made/m.txt && echo n > new.txt && chmod 600 edit.txt"
)


def prepare(base: Path) -> tuple[Path, Path]:
    return project(base)


@pytest.mark.parametrize("states", ["control-no-second-server", "one-state-dir", "two-state-dirs-in-the-root"])
def test_a_second_servers_start_leaves_the_copies_a_killed_servers_unfinished_apply_needs(
    tmp_path: Path, states: str
) -> None:
    """``one-state-dir``: both servers share XDG_STATE_HOME (the area in it), each has its ``--history-dir``.
    ``control-no-second-server``: as ``one-state-dir`` but B never starts (passes: A's next start finishes the apply).
    ``two-state-dirs-in-the-root``: each server has an XDG_STATE_HOME of its own inside the root, so both keep their
    copies in the root's own ``.mcp-guard/copies`` (as they do when the state directory is on another file system)."""

    def env(server: str, root: Path) -> dict[str, str]:
        return {"XDG_STATE_HOME": str(root / f".state-{server}" if states.startswith("two-") else tmp_path / "xdg")}

    arguments = {"command": COMMAND, "timeoutSeconds": 60}
    root, state = prepare(tmp_path / "traced")
    trace = tmp_path / "trace"
    traced = started(SX, root, state, state / "h1", {**env("a", root), "MCP_GUARD_KILL_TRACE": str(trace)})
    result = ask(traced, "shell_exec", arguments, 90)
    assert result is not None and result["structuredContent"]["transaction"] == "applied", result
    after = snapshot(root)
    after.entries = {k: v for k, v in after.entries.items() if not k.startswith((".state-", ".mcp-guard"))}
    steps = trace.read_text().splitlines()
    # the first step of the apply: everything after it is still to do from A's upper layer
    chosen = [i for i, s in enumerate(steps, 1) if s.split(" ", 1)[1].startswith("step 0 ")]
    assert chosen, steps
    n = chosen[0]
    root, state = prepare(tmp_path / "k")
    before = snapshot(root)
    before.entries = {k: v for k, v in before.entries.items() if not k.startswith((".state-", ".mcp-guard"))}
    assert (
        ask(started(SX, root, state, state / "h1", {**env("a", root), **killed_at(n)}), "shell_exec", arguments, 90)
        is None
    )
    # Server B: same user, same root, a history of its own; it starts and ends.
    if states != "control-no-second-server":
        started(SX, root, state, state / "h2", env("b", root)).close()
    # Server A's next start: it finishes its apply from its journal.
    started(SX, root, state, state / "h1", env("a", root)).close()
    now = snapshot(root)
    now.entries = {k: v for k, v in now.entries.items() if not k.startswith((".state-", ".mcp-guard"))}
    if not states.startswith("two-"):  # the journal finished, its copies went with the dead server's part
        assert not [p.name for p in (tmp_path / "xdg" / "mcp-guard" / "copies").iterdir() if p.is_dir()]
    lost = differences(before, now)
    if lost:  # not all old: then it must be all new, with a record undo plays back exactly
        diff = differences(after, now)
        assert not diff, f"killed at {steps[n - 1]}: neither all old nor all new: " + "; ".join(diff[:8])
        landed = list(records(state / "h1"))
        assert len(landed) == 1, landed
        done = undo(landed[0], state, state / "h1", env=env("a", root))
        assert done.returncode == 0, done.stderr[-400:]
        back = snapshot(root)
        back.entries = {k: v for k, v in back.entries.items() if not k.startswith((".state-", ".mcp-guard"))}
        # (with the state directories in the root, its own time moved when the servers made them: not the call's)
        assert not differences(before, back, skip=frozenset({"."}) if states.startswith("two-") else frozenset())


def test_a_killed_apply_whose_copies_are_gone_goes_back_to_all_old_at_the_next_start(tmp_path: Path) -> None:
    """Its copies removed anyway (by hand, or by a version that swept them): the next start cannot finish the
    apply and must not call a half apply finished; the steps done before the kill are gone back over."""
    arguments = {"command": COMMAND, "timeoutSeconds": 60}
    xdg = {"XDG_STATE_HOME": str(tmp_path / "xdg")}
    root, state = prepare(tmp_path / "traced")
    trace = tmp_path / "trace"
    result = ask(started(SX, root, state, state / "h", {**xdg, "MCP_GUARD_KILL_TRACE": str(trace)}), "shell_exec",
                 arguments, 90)  # fmt: skip
    assert result is not None and result["structuredContent"]["transaction"] == "applied", result
    steps = trace.read_text().splitlines()
    # Killed before the last step that takes a file from the copy: the steps before it are done.
    n = [i for i, s in enumerate(steps, 1) if re.match(r"\d+ step \d+ (place|copy|adopt) ", s)][-1]
    root, state = prepare(tmp_path / "k")
    before = snapshot(root)
    assert ask(started(SX, root, state, state / "h", {**xdg, **killed_at(n)}), "shell_exec", arguments, 90) is None
    assert differences(before, snapshot(root)), f"killed at {steps[n - 1]}: nothing was done yet"
    area = tmp_path / "xdg" / "mcp-guard" / "copies"
    parts = [p for p in area.iterdir() if p.is_dir()]
    assert parts, list(area.iterdir())
    for part in parts:
        shutil.rmtree(part)
    started(SX, root, state, state / "h", xdg).close()
    assert not differences(before, snapshot(root)), f"killed at {steps[n - 1]}"
    assert "went back over call" in (state / f"{SX}-h.err").read_text()
