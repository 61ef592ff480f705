"""Red team 84 F3: the next start finishes a dead server's apply forward (``changes.recovery.recover``) from its
journal, judged when the server was alive, against a tree other servers have changed since: nothing judges the
steps left (``Applier._steps``: ``not run.replay`` skips ``stale``; recover never judges).

Server A's apply is killed after its first step, before ``shaped/config`` (``core.fsmonitor``, judged for a plain
directory) lands. Meanwhile server B (alive) makes ``shaped/`` a git dir and ``w/.git`` naming it (judged with no
config there: harmless). A's next start finishes the plan: the config lands in the git dir; ``git status`` in ``w``
runs the program.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from mcp_server_guard import faults
from mcp_server_guard.changes.recovery import recover
from mcp_server_guard.changes.transactions import Transactions
from mcp_server_guard.changes.undo_judged import rechecks_for
from mcp_server_guard.changes.what import What
from support.settling import POLICY, git_dir_made, untouched_copy

pytestmark = pytest.mark.anyio


class _Killed(BaseException):
    """The server process dies here (SIGKILL: nothing of the run's own clean-up but closing its files)."""


async def test_a_dead_servers_apply_finished_at_the_next_start_is_judged_against_the_tree_as_it_is_then(
    settled: tuple[Transactions, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    shaped, work = root / "shaped", root / "w"
    shaped.mkdir()
    work.mkdir()
    (work / "a.txt").write_text("a\n")
    (root / "a").mkdir()
    (root / "a" / "f.txt").write_text("old\n")
    marker = tmp_path / "ran-outside-the-box"
    time.sleep(0.02)
    started = time.time_ns()
    copy = untouched_copy(part, "c1")
    (copy / "u0" / "a").mkdir()
    (copy / "u0" / "a" / "f.txt").write_text("new\n")
    (copy / "u0" / "shaped").mkdir()
    (copy / "u0" / "shaped" / "config").write_text(f"[core]\n\tfsmonitor = touch {marker}\n")
    labels: list[str] = []

    def point(label: str) -> None:
        labels.append(label)
        if label.startswith("step ") and label.endswith("shaped/config"):
            raise _Killed(label)

    monkeypatch.setattr(faults, "point", point)
    roots = [str(root)]
    with pytest.raises(_Killed):
        await transactions.settle(
            copy.name, True, audit_id="a1", started_ns=started, roots=roots, ask=None, hold=False, shown="x",
            what=What(),
        )  # fmt: skip
    monkeypatch.setattr(faults, "point", lambda label: None)
    assert not (shaped / "config").exists() and (root / "a" / "f.txt").read_text() == "new\n", labels
    assert transactions.applier.unfinished("a1")
    # B, alive, judged with no config in shaped/: harmless, applied under the tree lock.
    git_dir_made(shaped, work)
    # A's server starts again: what it finishes is judged against the tree now (as shell_exec's start does).
    areas = sorted({p for _r, p in transactions.area.overlays()})
    history = transactions.applier.history
    assert recover(history, roots, areas, lambda: rechecks_for(history, roots, POLICY)) == 1
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null")
    subprocess.run(["git", "status"], cwd=work, env=env, capture_output=True, timeout=60, check=False)
    assert not marker.exists(), "the next start finished the apply into the git dir made since, unjudged"
    assert not (shaped / "config").exists() and not transactions.applier.unfinished("a1")  # gone back instead
