"""A server's transactions over one root, at library level: copies made by hand in its area and settled as a call's
end settles them (tests/changes/test_transactions_units.py, the tree lock's red-team tests)."""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from mcp_server_guard.changes.area import CopyArea
from mcp_server_guard.changes.results import Settled
from mcp_server_guard.changes.transactions import Transactions
from mcp_server_guard.changes.what import What
from mcp_server_guard.files.history import HistoryStore
from mcp_server_guard.files.treelock import tree_lock
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for

POLICY = load_policy()


@contextlib.contextmanager
def transactions_over(root: Path, state: Path, history: Path) -> Iterator[tuple[Transactions, Path]]:
    """A server's transactions over ``root`` (made if missing), and the part of the area its copies live in."""
    root.mkdir(exist_ok=True)
    area = CopyArea([str(root)], state)
    transactions = Transactions(area, HistoryStore(history, 1 << 30), protection_for(POLICY), POLICY.effects)
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


async def settled_call(
    transactions: Transactions, part: Path, audit_id: str, files: dict[str, str], removed: Sequence[str] = ()
) -> Settled:
    """A call whose command wrote ``files`` (root-relative path -> text) and removed ``removed`` (each an overlayfs
    whiteout: ``rm -rf out``), settled as its end settles it (nobody to ask): the result."""
    started = time.time_ns()
    copy = untouched_copy(part, f"c{audit_id}")
    for path, content in files.items():
        (copy / "u0" / path).parent.mkdir(parents=True, exist_ok=True)
        (copy / "u0" / path).write_text(content)
    for path in removed:
        (copy / "u0" / path).parent.mkdir(parents=True, exist_ok=True)
        os.mknod(copy / "u0" / path, 0o600 | stat.S_IFCHR, os.makedev(0, 0))
    roots = [root for root, _part in transactions.area.overlays()]
    return await transactions.settle(
        copy.name, True, audit_id=audit_id, started_ns=started, roots=roots, ask=None, hold=False, shown="x",
        what=What(),
    )  # fmt: skip


async def applied_call(transactions: Transactions, part: Path, audit_id: str, files: dict[str, str]) -> None:
    """``settled_call``, applied unasked."""
    done = await settled_call(transactions, part, audit_id, files)
    assert done.transaction == "applied", done


async def notes_rewritten(transactions: Transactions, part: Path, root: Path) -> Path:
    """``root/notes.txt`` (0644, ``v1``) rewritten to ``v2`` by call 000000000001, applied unasked: for a test of
    what its undo (``0000000000aa``) does over a change made after it."""
    notes = root / "notes.txt"
    notes.write_text("v1\n")
    os.chmod(notes, 0o644)
    await applied_call(transactions, part, "000000000001", {"notes.txt": "v2\n"})
    return notes


def mode_of(path: Path) -> int:
    """A path's permission bits, never followed."""
    return stat.S_IMODE(os.lstat(path).st_mode)


def python_started(root: Path) -> None:
    """The user's next start of the project's Python (``root/.venv``), outside any box: what its start-up files
    run, they run now."""
    subprocess.run([str(root / ".venv" / "bin" / "python"), "-c", "pass"], capture_output=True, timeout=60,
                   check=False)  # fmt: skip


def venv_site(root: Path) -> Path:
    """A ``python -m venv`` environment made at ``root/.venv`` (no pip): its site-packages."""
    base = Path(sys.base_prefix) / "bin" / "python3"
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(root / ".venv")], check=True, capture_output=True,
                   timeout=120)  # fmt: skip
    return next((root / ".venv" / "lib").glob("python3*/site-packages"))


def git_dir_made(shaped: Path, work: Path) -> None:
    """Another server's write, under the tree lock: ``shaped/`` made a git dir, and ``work/.git`` a file naming it
    (each harmless on its own while ``shaped/config`` holds nothing git would run)."""
    with tree_lock([shaped.stat().st_dev], wait_s=5):
        (shaped / "objects").mkdir()
        (shaped / "refs").mkdir()
        (shaped / "HEAD").write_text("ref: refs/heads/main\n")
        (work / ".git").write_text(f"gitdir: {os.path.relpath(shaped, work)}\n")


def breath_letting_in(writer: Callable[[], None], breathe: Callable[..., bool]) -> bool:
    """A run's breath (``treelock.breathe``, the real one) with ``writer`` waiting for the lock: it comes in."""
    thread = threading.Thread(target=writer)
    thread.start()
    threading.Event().wait(0.05)  # the writer waits for the lock
    others = breathe(every_s=0)
    thread.join(10)
    return others
