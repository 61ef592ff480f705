"""A journal is trusted only as far as it checks out: a start finishes a dead server's run only when every step is
a kind a run makes, every entry is a history id, and every entry it puts back was kept from that very path (for
the call it says it undoes). A journal forged where a command could write is left alone, nothing changed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mcp_server_guard.changes.apply import Applier
from mcp_server_guard.changes.journal import JOURNALS
from mcp_server_guard.changes.plan import Applied, Op, Plan
from mcp_server_guard.changes.recovery import recover
from mcp_server_guard.changes.what import What
from mcp_server_guard.files.history import HistoryStore
from support.copies import Copy, overlays_work
from support.fidelity import differences, snapshot
from support.journals import sealed, write_sealed

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")


def forged(store: HistoryStore, plan: Plan) -> Path:
    """A journal holding ``plan``, sealed with the history's key: what the checks behind the seal must refuse."""
    return write_sealed(store.directory, plan.audit_id, [plan.json({})])


@pytest.fixture
def kept(tmp_path: Path) -> tuple[Copy, HistoryStore, str]:
    """A project whose hooks-like script was replaced by a call: its old bytes are a history entry."""
    copy = Copy(tmp_path)
    (copy.root / "run.sh").write_text("echo planted by a forged journal\n")
    store = HistoryStore(tmp_path / "history", 1 << 30)
    Applier(store).apply([copy.run("echo harmless > run.sh")], "a00000000001", copy.started)
    entry = str(store.calls.read("a00000000001")["changes"][0]["before"])
    return copy, store, entry


def test_attack_forged_journal_putting_an_entry_back_at_another_path_is_left_alone(
    kept: tuple[Copy, HistoryStore, str],
) -> None:
    copy, store, entry = kept
    before = snapshot(copy.root)
    target = copy.root / "elsewhere.sh"
    record = Applied(str(target), "delete", "file", before=entry)
    plan = Plan("b00000000001", 0, (Op("restore", str(copy.root), "elsewhere.sh", record=record),),
                What(tool="undo", undoes="a00000000001"))  # fmt: skip
    journal = forged(store, plan)
    assert recover(store, [str(copy.root)], []) == 0
    assert differences(before, snapshot(copy.root)) == [] and journal.exists()


def test_attack_forged_journal_with_a_made_up_step_or_entry_is_left_alone(
    kept: tuple[Copy, HistoryStore, str],
) -> None:
    copy, store, entry = kept
    before = snapshot(copy.root)
    made_up = Plan("b00000000002", 0, (Op("plant", str(copy.root), "x.sh", entry=entry),))
    traversal = Plan("b00000000003", 0, (Op("remove", str(copy.root), "run.sh", entry="../../outside"),))
    for plan in (made_up, traversal):
        forged(store, plan)
    assert recover(store, [str(copy.root)], []) == 0
    assert differences(before, snapshot(copy.root)) == []


def _undo_plan(copy: Copy, entry: str) -> Plan:
    """An undo of the fixture's call, as a server would plan it (every check behind the seal accepts it)."""
    record = Applied(str(copy.root / "run.sh"), "modify", "file", before=entry)
    return Plan("b00000000009", 0, (Op("restore", str(copy.root), "run.sh", entry=entry, record=record),),
                What(tool="undo", undoes="a00000000001"))  # fmt: skip


def test_attack_unsealed_journal_is_left_alone(kept: tuple[Copy, HistoryStore, str]) -> None:
    copy, store, entry = kept
    before = snapshot(copy.root)
    journal = store.directory / JOURNALS / "apply-b00000000009.json"
    journal.write_text(json.dumps(_undo_plan(copy, entry).json({})) + "\n")
    assert recover(store, [str(copy.root)], []) == 0
    assert differences(before, snapshot(copy.root)) == [] and journal.exists()


def test_attack_journal_sealed_with_another_key_is_left_alone(kept: tuple[Copy, HistoryStore, str]) -> None:
    copy, store, entry = kept
    before = snapshot(copy.root)
    journal = store.directory / JOURNALS / "apply-b00000000009.json"
    journal.write_bytes(sealed(journal, os.urandom(32), [_undo_plan(copy, entry).json({})]))
    assert recover(store, [str(copy.root)], []) == 0
    assert differences(before, snapshot(copy.root)) == [] and journal.exists()


def test_attack_journal_with_a_line_spliced_from_another_is_left_alone(kept: tuple[Copy, HistoryStore, str]) -> None:
    copy, store, entry = kept
    before = snapshot(copy.root)
    other = write_sealed(store.directory, "b00000000008", [_undo_plan(copy, entry).json({}), {"rollback": {}}])
    spliced = other.read_text().splitlines()[1]  # sealed, but over the other journal's plan
    journal = write_sealed(store.directory, "b00000000009", [_undo_plan(copy, entry).json({})])
    with journal.open("a") as fh:
        fh.write(spliced + "\n")
    other.unlink()
    assert recover(store, [str(copy.root)], []) == 0
    assert differences(before, snapshot(copy.root)) == [] and journal.exists()


def test_a_sealed_journal_with_a_torn_last_line_is_finished(kept: tuple[Copy, HistoryStore, str]) -> None:
    copy, store, entry = kept
    journal = write_sealed(store.directory, "b00000000009", [_undo_plan(copy, entry).json({})])
    with journal.open("a") as fh:
        fh.write('{"done": 0, "appl')  # a kill in the middle of a line
    assert recover(store, [str(copy.root)], []) == 1  # taken up (its one step finds the file there, and goes back)
    assert not journal.exists()
