"""Red team 95 F1 (issue 42, claim 3: "no server trusts a journal, history entry or record it did not write ...
every state directory of the user's servers is hidden from every server's commands").

The registry keeps every state directory a server of the user has used (``registry.state_paths``) so that it stays
hidden from every other server's commands "whether its server runs or not" — the case its docstring names is a
state directory in /tmp emptied at boot. But ``Protection.hidden_paths`` drops every registered path that does not
exist right now (``os.path.lexists``), and ``Protection.write_rule`` refuses a not-yet-made hidden path only for the
policy's own hidden list (``hidden_named`` of ``_hidden_abs``), never for a registered state directory. So while
server A's state directory is absent, a command of server B whose root holds that path may *create* it, with
whatever it likes inside: a journal key (``history/.key``, 0600, the user's own), sealed journals under
``history/.journal/``, and the copies they place from. The next start of A takes that key as its own
(``changes.journal.journal_key`` checks only owner and mode) and finishes the forged journals (``recovery.recover``:
the plan's steps land files from a copy in A's area into A's roots, unjudged by any question).

Safe behaviour: a path inside a registered state directory is refused whether the directory exists or not, as
``~/.kube/config`` is before it is made.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from mcp_server_guard import registry
from mcp_server_guard.changes.changeset import Change
from mcp_server_guard.changes.journal import Journal, journal_key
from mcp_server_guard.changes.plan import Op, Plan
from mcp_server_guard.changes.recovery import recover
from mcp_server_guard.changes.transactions import Transactions
from mcp_server_guard.changes.undo_judged import rechecks_for
from mcp_server_guard.changes.what import What
from mcp_server_guard.files.history import HistoryStore
from support.settling import untouched_copy

pytestmark = pytest.mark.anyio

KEY = bytes(range(32))  # a key the forger knows


def _registered(state: Path) -> None:
    """Server A used ``state`` (registered, as every server registers its state directories), then ended."""
    registration = registry.register([], [state], writes=False)
    assert registration is not None
    registration.close()
    assert os.path.realpath(state) in registry.state_paths()


async def _plant(transactions: Transactions, part: Path, rel: str) -> str:
    """Server B's command writes ``rel/history/.key`` (0600) beside a journal: the transaction."""
    copy = untouched_copy(part, "cplant")
    key = copy / "u0" / rel / "history" / ".key"
    key.parent.mkdir(parents=True)
    (key.parent / ".journal").mkdir()
    for d in (copy / "u0" / rel, key.parent, key.parent / ".journal"):
        os.chmod(d, 0o700)
    key.write_bytes(KEY)
    os.chmod(key, 0o600)
    roots = [root for root, _part in transactions.area.overlays()]
    done = await transactions.settle(
        copy.name, True, audit_id="000000000001", started_ns=time.time_ns(), roots=roots, ask=None, hold=False,
        shown="x", what=What(),
    )  # fmt: skip
    return done.transaction


async def test_control_a_registered_state_dir_that_exists_is_refused(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    transactions, part = settled
    state = tmp_path / "root" / "sessions" / "a"
    state.mkdir(parents=True)
    _registered(state)
    await _plant(transactions, part, "sessions/a")
    assert not (state / "history" / ".key").exists(), "a command wrote into another server's state directory"


async def test_a_registered_state_dir_that_is_absent_cannot_be_made_by_a_command(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    transactions, part = settled
    (tmp_path / "root" / "sessions").mkdir()
    state = tmp_path / "root" / "sessions" / "a"
    state.mkdir()
    _registered(state)
    state.rmdir()  # emptied (a reboot's /tmp, a person's clean-up): A is not running now
    transaction = await _plant(transactions, part, "sessions/a")
    planted = (state / "history" / ".key").exists()
    trusted = planted and journal_key(state / "history") == KEY  # what server A's next start seals and checks with
    assert not planted, (
        f"a command of another server made server A's state directory ({transaction}); A's next start takes the "
        f"planted journal key for its own: {trusted}"
    )


async def test_server_a_finishes_a_journal_a_command_of_server_b_planted(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    """The whole chain: B's command makes A's absent state directory with a key and a journal sealed with it; A's
    recovery (as ``mcp-guard undo`` and A's start run it) carries the journal out in A's project: a file deleted
    there that no call of A's ever judged."""
    await _chain(settled, tmp_path, registered=True)


async def test_a_journal_planted_where_a_state_dir_no_longer_registered_was_is_not_carried_out(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    """The second wall: the registry forgot A's state directory (a starting server prunes those that are gone),
    so B's command may make it — but the key and journal it plants there seal nothing A trusts: the journal key
    is the user's, in the registry."""
    await _chain(settled, tmp_path, registered=False)


async def _chain(settled: tuple[Transactions, Path], tmp_path: Path, *, registered: bool) -> None:
    transactions, part = settled
    project_a = tmp_path / "project_a"
    project_a.mkdir()
    (project_a / "notes.txt").write_text("the person's notes\n")
    (tmp_path / "root" / "sessions").mkdir()
    state = tmp_path / "root" / "sessions" / "a"
    state.mkdir()
    if registered:
        _registered(state)
    state.rmdir()
    # The forger's journal (made with the project's own code and the key it chose), carried by B's command.
    forge = tmp_path / "forge"
    forge.mkdir()
    size = (project_a / "notes.txt").stat().st_size
    op = Op("delete", str(project_a), "notes.txt", entry=HistoryStore.new_id(),
            change=Change("notes.txt", "delete", "file", size=size, mode=0o644))  # fmt: skip
    journal = Journal.create(forge, Plan("0000000000ff", time.time_ns(), (op,), What()), {}, KEY)
    os.close(journal.fd)
    sealed = (forge / "apply-0000000000ff.json").read_bytes()
    copy = untouched_copy(part, "cplant")
    hist = copy / "u0" / "sessions" / "a" / "history"
    (hist / ".journal").mkdir(parents=True)
    for d in (hist.parent, hist, hist / ".journal"):
        os.chmod(d, 0o700)
    (hist / ".key").write_bytes(KEY)
    (hist / ".journal" / "apply-0000000000ff.json").write_bytes(sealed)
    for f in (hist / ".key", hist / ".journal" / "apply-0000000000ff.json"):
        os.chmod(f, 0o600)
    roots = [root for root, _part in transactions.area.overlays()]
    done = await transactions.settle(
        copy.name, True, audit_id="000000000001", started_ns=time.time_ns(), roots=roots, ask=None, hold=False,
        shown="x", what=What(),
    )  # fmt: skip
    assert registered or (state / "history" / ".key").exists(), done  # (the second wall is what is tested here)
    store = HistoryStore(state / "history", 1 << 30)
    finished = recover(store, [str(project_a)], [], lambda: rechecks_for(store, [str(project_a)]))
    assert (project_a / "notes.txt").exists(), (
        f"server A carried out a journal a command of server B wrote (finished {finished}): notes.txt is gone"
    )
