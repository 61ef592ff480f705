"""Red team 83 on the tree lock a change set is judged without (issue 42 item 7).

F1: the lock, and its count (all that tells a judgement made without the lock that it went stale), lived in each
server's state directory: two servers of the user with different ``XDG_STATE_HOME`` took different locks. While
server A's change set (a config with ``core.fsmonitor`` in a plain directory) was judged, server B made that
directory a git dir and a gitfile pointing at it; A's apply found nobody had taken *its* lock and landed the config
unjudged: the user's ``git status`` ran the program. The lock now lives in the registry every server of the user
finds, whatever its state directory.

F2: a taking of the lock that found its own judgement stale (and wrote nothing) was counted as a write: two long
judgements and one outside write made each other stale round after round, until both were judged under the lock.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_server_guard import registry
from mcp_server_guard.changes.effects import judge as effects_judge
from mcp_server_guard.changes.transactions import Transactions
from mcp_server_guard.files import treelock
from mcp_server_guard.files.treelock import generations, tree_lock
from support.settling import settle, transactions_over, untouched_copy

pytestmark = pytest.mark.anyio


async def test_attack_a_server_with_another_state_dir_cannot_make_a_judgement_stale_unnoticed(
    settled: tuple[Transactions, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transactions, part = settled
    shaped, work = tmp_path / "root" / "shaped", tmp_path / "root" / "w"
    marker = tmp_path / "ran-outside-the-box"
    copy = untouched_copy(part, "c1")
    (copy / "u0" / "shaped").mkdir()
    (copy / "u0" / "shaped" / "config").write_text(f"[core]\n\tfsmonitor = touch {marker}\n")
    shaped.mkdir()
    work.mkdir()
    (work / "a.txt").write_text("a\n")
    calls: list[int] = []

    def other_server() -> None:
        # Server B: the same user and project, a state directory of its own (read at each taking of the lock).
        saved = os.environ["XDG_STATE_HOME"]
        os.environ["XDG_STATE_HOME"] = str(tmp_path / "other-session-state")
        try:
            with tree_lock([shaped.stat().st_dev], wait_s=2):
                (shaped / "objects").mkdir()
                (shaped / "refs").mkdir()
                (shaped / "HEAD").write_text("ref: refs/heads/main\n")
                (work / ".git").write_text("gitdir: ../shaped\n")
        finally:
            os.environ["XDG_STATE_HOME"] = saved

    def judging(*args: Any, **kwargs: Any) -> Any:
        judgement = effects_judge(*args, **kwargs)
        calls.append(1)
        if len(calls) == 1:  # A's first judgement is done; before its apply, server B writes
            writer = threading.Thread(target=other_server)
            writer.start()
            writer.join(10)
        return judgement

    monkeypatch.setattr("mcp_server_guard.changes.effects.judge", judging)  # (looked up at each judgement)
    await settle(transactions, copy.name)
    assert (shaped / "HEAD").exists()  # B's write landed: shaped/ is a git dir
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null")
    subprocess.run(["git", "status"], cwd=work, env=env, capture_output=True, timeout=60, check=False)
    assert not marker.exists()
    assert len(calls) == 2 and "fsmonitor" not in (shaped / "config").read_text()  # judged again, as a git dir's


def test_a_taking_that_finds_its_judgement_stale_is_not_counted_as_a_write(tmp_path: Path) -> None:
    device = [tmp_path.stat().st_dev]
    stale = generations(device)
    with tree_lock(device):  # someone wrote
        pass
    seen_by_b = generations(device)  # B starts judging now
    with tree_lock(device, since=stale) as changed:  # A's check: stale, A writes nothing and judges again
        assert changed
    with tree_lock(device, since=seen_by_b) as changed:  # B's check: nobody wrote since B began
        assert not changed


def _held(device: int) -> bool:
    """Whether someone holds the tree lock now (looked at without counting)."""
    fd = os.open(registry.directory() / "locks" / f"{device}.lock", os.O_RDWR | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


async def test_two_long_judgements_and_one_write_are_never_judged_under_the_lock(
    settled: tuple[Transactions, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, part = settled
    root = tmp_path / "root"
    copy_a = untouched_copy(part, "ca")
    (copy_a / "u0" / "a.txt").write_text("a\n")
    device = root.stat().st_dev
    monkeypatch.setattr(treelock, "LOCKED_MAX_S", 0.05)
    monkeypatch.setattr(treelock, "PATIENCE_S", 4.0)
    judged: list[tuple[str, bool]] = []

    def judging(sets: Any, *args: Any, **kwargs: Any) -> Any:
        who = "A" if any(c.path == "a.txt" for s in sets for c in s.changes) else "B"
        judged.append((who, _held(device)))
        threading.Event().wait(0.3)  # a large change set's judgement (190,000 files: 13 s)
        return effects_judge(sets, *args, **kwargs)

    def one_write() -> None:
        threading.Event().wait(0.1)
        with tree_lock([device], wait_s=5):
            (root / "note.txt").write_text("n\n")  # another server's one write (file_write)

    monkeypatch.setattr("mcp_server_guard.changes.effects.judge", judging)  # (looked up at each judgement)
    results: dict[str, str] = {}
    writer = threading.Thread(target=one_write)
    writer.start()
    with transactions_over(root, tmp_path / "state-b", tmp_path / "history-b") as (second, part_b):
        copy_b = untouched_copy(part_b, "cb")
        (copy_b / "u0" / "b.txt").write_text("b\n")

        async def run_b() -> None:
            await anyio.sleep(0.15)
            results["B"] = await settle(second, copy_b.name)

        async def run_a() -> None:
            results["A"] = await settle(first, copy_a.name)

        try:
            with anyio.fail_after(60):
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(run_a)
                    tasks.start_soon(run_b)
        finally:
            writer.join(10)
    assert results == {"A": "applied", "B": "applied"}
    rounds = {who: sum(1 for w, _ in judged if w == who) for who in "AB"}
    assert not [who for who, held in judged if held], rounds  # never judged under the lock
    assert max(rounds.values()) <= 3, rounds
