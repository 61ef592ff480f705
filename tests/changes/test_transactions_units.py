"""Settling a call's copy, on its own: a copy that holds no change is removed off the caller's way.

Removing one is a few directories, but each rmdir can take a millisecond while other calls' namespaces are being
made and torn down; a hundred calls ending at once held the event loop (and every other call) for most of a second.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_server_guard.changes import transactions as transactions_module
from mcp_server_guard.changes.effects import judge as effects_judge
from mcp_server_guard.changes.transactions import Transactions
from mcp_server_guard.files import treelock
from mcp_server_guard.files import trees as trees_module
from support.settling import settle, untouched_copy

pytestmark = pytest.mark.anyio


async def test_an_untouched_copy_is_settled_unchanged_and_removed(settled: tuple[Transactions, Path]) -> None:
    transactions, part = settled
    copies = [untouched_copy(part, f"c{i}") for i in range(3)]
    for copy in copies:
        assert await settle(transactions, copy.name) == "unchanged"
    assert transactions.removed(timeout=10)
    assert not any(copy.exists() for copy in copies)


async def test_settling_an_untouched_copy_does_not_wait_for_its_removal(
    settled: tuple[Transactions, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    transactions, part = settled
    copy = untouched_copy(part, "c1")
    release = threading.Event()
    real = trees_module.remove_tree

    def slow_remove(path: Path) -> None:
        release.wait(10)  # a file system that takes its time
        real(path)

    monkeypatch.setattr(transactions_module, "remove_tree", slow_remove)
    with anyio.fail_after(5):
        assert await settle(transactions, copy.name) == "unchanged"
    assert copy.exists() and not transactions.removed(timeout=0.05)  # still being removed, off the caller's way
    release.set()
    assert transactions.removed(timeout=10)
    assert not copy.exists()


async def test_a_copy_that_cannot_be_removed_does_not_stop_the_next_ones(
    settled: tuple[Transactions, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    transactions, part = settled
    first, second = untouched_copy(part, "c1"), untouched_copy(part, "c2")
    real = trees_module.remove_tree

    def failing_once(path: Path) -> None:
        if path.name == "c1":
            raise RuntimeError("the file system said no")
        real(path)

    monkeypatch.setattr(transactions_module, "remove_tree", failing_once)
    assert await settle(transactions, first.name) == "unchanged"
    assert await settle(transactions, second.name) == "unchanged"
    assert transactions.removed(timeout=10)
    assert first.exists() and not second.exists()


async def test_a_copy_with_a_change_is_applied_not_taken_for_untouched(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    transactions, part = settled
    copy = untouched_copy(part, "c1")
    (copy / "u0" / "new.txt").write_text("new\n")
    assert await settle(transactions, copy.name) == "applied"
    assert (tmp_path / "root" / "new.txt").read_text() == "new\n"


def test_the_tree_lock_counts_every_taking_and_looking_at_the_count_is_no_taking(tmp_path: Path) -> None:
    from mcp_server_guard.files.treelock import breathe, generations, tree_lock

    device = [tmp_path.stat().st_dev]
    seen = generations(device)
    assert seen is not None and generations(device) == seen  # looking is no taking
    with tree_lock(device, since=seen) as changed:
        assert not changed  # nobody took it since ``seen``
    with tree_lock(device, since=seen) as changed:
        assert changed  # the taking above counted
    before = generations(device)
    with tree_lock(device):
        breathe(every_s=0)  # a long run's breath: another writer may come in, and the run goes on writing after it
    after = generations(device)
    assert before is not None and after is not None
    assert after[0][0] - before[0][0] == 2 and after[0][1] > before[0][1]  # its taking and its taking again


def _attack_copy(part: Path, shaped: Path) -> Path:
    """A copy whose command wrote ``shaped/config`` with a key that runs a program, in a directory that is not a
    git dir (yet)."""
    copy = untouched_copy(part, "c1")
    (copy / "u0" / "shaped").mkdir()
    (copy / "u0" / "shaped" / "config").write_text("[core]\n\tfsmonitor = touch /tmp/ran-by-git\n")
    shaped.mkdir()
    return copy


async def test_attack_a_judgement_made_stale_by_another_servers_write_is_judged_again_before_anything_lands(
    settled: tuple[Transactions, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Red team 82 F2 (the judgement no longer holds the tree lock): while a call's changes are judged, another
    # server's write makes ``shaped/`` a git dir. The config judged harmless in a plain directory must not land in a
    # git dir unjudged: the apply sees the lock was taken meanwhile and judges again.
    from mcp_server_guard.files.treelock import tree_lock

    transactions, part = settled
    shaped = tmp_path / "root" / "shaped"
    copy = _attack_copy(part, shaped)
    real = effects_judge
    calls: list[float] = []
    waited: list[float] = []

    def other_server() -> None:
        started = time.monotonic()
        with tree_lock([shaped.stat().st_dev], wait_s=2):  # another server's apply: never waits for a judgement
            waited.append(time.monotonic() - started)
            (shaped / "objects").mkdir()
            (shaped / "refs").mkdir()
            (shaped / "HEAD").write_text("ref: refs/heads/main\n")

    def judging(*args: Any, **kwargs: Any) -> Any:
        judgement = real(*args, **kwargs)
        calls.append(time.monotonic())
        if len(calls) == 1:  # the first judgement is done; before its apply, the other server writes
            writer = threading.Thread(target=other_server)
            writer.start()
            writer.join(10)
        return judgement

    monkeypatch.setattr("mcp_server_guard.changes.effects.judge", judging)  # (looked up at each judgement)
    assert await settle(transactions, copy.name) == "applied"
    assert len(calls) == 2 and waited and waited[0] < 1.0
    assert "fsmonitor" not in (shaped / "config").read_text()  # judged again: a git dir's config, the key left out


async def test_a_judgement_other_writers_keep_making_stale_is_judged_under_the_lock_at_last(
    settled: tuple[Transactions, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_server_guard.files.treelock import TreeBusy, tree_lock

    transactions, part = settled
    copy = untouched_copy(part, "c1")
    (copy / "u0" / "new.txt").write_text("new\n")
    device = [(tmp_path / "root").stat().st_dev]
    real = effects_judge
    held_while_judged: list[bool] = []

    def judging(*args: Any, **kwargs: Any) -> Any:
        try:
            with tree_lock(device, wait_s=0.05):  # another writer, every time a judgement runs
                held_while_judged.append(False)
        except TreeBusy:
            held_while_judged.append(True)
        return real(*args, **kwargs)

    monkeypatch.setattr("mcp_server_guard.changes.effects.judge", judging)  # (looked up at each judgement)
    assert await settle(transactions, copy.name) == "applied"
    rounds = treelock.ROUNDS
    assert held_while_judged == [False] * rounds + [True]  # judged without the lock, then under it
    assert (tmp_path / "root" / "new.txt").read_text() == "new\n"


async def test_a_long_judgement_other_writers_keep_making_stale_is_tried_without_the_lock_a_while_longer(
    settled: tuple[Transactions, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A judgement longer than writers wait for the lock is not done under it after three rounds: tried without it
    # for a while longer (another server's writes go on meanwhile), under it only at last.
    from mcp_server_guard.files.treelock import TreeBusy, tree_lock

    transactions, part = settled
    copy = untouched_copy(part, "c1")
    (copy / "u0" / "new.txt").write_text("new\n")
    device = [(tmp_path / "root").stat().st_dev]
    real = effects_judge
    held_while_judged: list[bool] = []
    monkeypatch.setattr(treelock, "LOCKED_MAX_S", 0.05)
    monkeypatch.setattr(treelock, "PATIENCE_S", 1.0)

    def judging(*args: Any, **kwargs: Any) -> Any:
        try:
            with tree_lock(device, wait_s=0.05):  # another writer, every time a judgement runs
                held_while_judged.append(False)
        except TreeBusy:
            held_while_judged.append(True)
        threading.Event().wait(0.1)  # a judgement longer than _LOCKED_MAX_S
        return real(*args, **kwargs)

    monkeypatch.setattr("mcp_server_guard.changes.effects.judge", judging)  # (looked up at each judgement)
    assert await settle(transactions, copy.name) == "applied"
    assert held_while_judged[-1] and not any(held_while_judged[:-1])
    assert len(held_while_judged) - 1 > treelock.ROUNDS  # rounds went on past three, for a second
