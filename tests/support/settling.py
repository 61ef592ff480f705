"""A server's transactions over one root, at library level: copies made by hand in its area and settled as a call's
end settles them (tests/changes/test_transactions_units.py, the tree lock's red-team tests)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from mcp_server_guard.changes.apply import Applier
from mcp_server_guard.changes.area import CopyArea
from mcp_server_guard.changes.transactions import Transactions
from mcp_server_guard.changes.what import What
from mcp_server_guard.files.history import HistoryStore
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for

POLICY = load_policy()


@contextlib.contextmanager
def transactions_over(root: Path, state: Path, history: Path) -> Iterator[tuple[Transactions, Path]]:
    """A server's transactions over ``root`` (made if missing), and the part of the area its copies live in."""
    root.mkdir(exist_ok=True)
    area = CopyArea([str(root)], state)
    transactions = Transactions(area, Applier(HistoryStore(history, 1 << 30)), protection_for(POLICY), POLICY.effects)
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


async def settle(transactions: Transactions, name: str, started_ns: int = 0) -> str:
    """Settle the copy ``name`` as a call's end does (nobody to ask); its transaction. ``started_ns``: when its
    command started (a real file changed after it is someone else's change: a conflict)."""
    roots = [root for root, _part in transactions.area.overlays()]
    done = await transactions.settle(
        name, True, audit_id="a1", started_ns=started_ns, roots=roots, ask=None, hold=False, shown="true", what=What()
    )
    return done.transaction
