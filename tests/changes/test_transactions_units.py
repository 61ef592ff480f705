"""Settling a call's copy, on its own: a copy that holds no change is removed off the caller's way.

Removing one is a few directories, but each rmdir can take a millisecond while other calls' namespaces are being
made and torn down; a hundred calls ending at once held the event loop (and every other call) for most of a second.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from mcp_server_guard.changes import transactions as transactions_module
from mcp_server_guard.changes.apply import Applier
from mcp_server_guard.changes.area import CopyArea
from mcp_server_guard.changes.transactions import Transactions
from mcp_server_guard.changes.what import What
from mcp_server_guard.files import trees as trees_module
from mcp_server_guard.files.history import HistoryStore
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for

pytestmark = pytest.mark.anyio
POLICY = load_policy()


@pytest.fixture
def settled(tmp_path: Path) -> Iterator[tuple[Transactions, Path]]:
    """A server's transactions over one root, and the part of the area its copies live in."""
    root = tmp_path / "root"
    root.mkdir()
    area = CopyArea([str(root)], tmp_path / "state")
    applier = Applier(HistoryStore(tmp_path / "history", 1 << 30))
    transactions = Transactions(area, applier, protection_for(POLICY), POLICY.effects)
    try:
        yield transactions, Path(area.overlays()[0][1])
    finally:
        transactions.close()
        area.close()


def untouched_copy(part: Path, name: str) -> Path:
    """A copy as a call that changed nothing leaves it: an empty upper layer, and what a volatile overlay leaves
    in its work directory."""
    (part / name / "u0").mkdir(parents=True)
    (part / name / "w0" / "work" / "incompat" / "volatile").mkdir(parents=True)
    (part / name / "w0" / "work" / "incompat" / "volatile" / "dirty").write_bytes(b"")
    return part / name


async def settle(transactions: Transactions, name: str) -> str:
    roots = [root for root, _part in transactions.area.overlays()]
    done = await transactions.settle(
        name, True, audit_id="a1", started_ns=0, roots=roots, ask=None, hold=False, shown="true", what=What()
    )
    return done.transaction


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
