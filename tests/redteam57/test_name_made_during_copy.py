"""Red team 57: with the history on another file system, what a step replaces by another kind is renamed aside and
copied into the history (seconds for a big tree) before the new thing is renamed in without replacing: the name
is empty for the whole copy. Someone (an editor's save, a build tool) makes a file there meanwhile. Plain file
operations on temporary copies (data, never harmful)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server_guard import faults
from mcp_server_guard.audit import new_audit_id
from mcp_server_guard.changes.apply import Applier, NotApplied
from mcp_server_guard.files.history import HistoryError
from support.crashwalk import crash_walk
from support.elsewhere import history_elsewhere

walk = crash_walk("crash_walk_rt57_during")
pytestmark = walk.pytestmark

SOMEONE = b"someone's new file\n"


def _during_copy(monkeypatch: pytest.MonkeyPatch, make: Path, prefix: str = "history copied") -> list[str]:
    real = faults.point
    fired: list[str] = []

    def point(label: str) -> None:
        if label.startswith(prefix) and not fired:
            fired.append(label)
            make.write_bytes(SOMEONE)
        real(label)

    monkeypatch.setattr(faults, "point", point)
    return fired


@pytest.mark.parametrize("elsewhere", [True, False], ids=["history-elsewhere", "same-fs"])
def test_attack_a_file_made_while_a_file_replaced_by_a_tree_is_copied_loses_neither_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, elsewhere: bool
) -> None:
    if elsewhere:
        history_elsewhere(monkeypatch, tmp_path)
    copy, _before = walk.fresh(tmp_path / "a", "rm edit.txt; mkdir edit.txt; echo x > edit.txt/in")
    store = walk.store_at(tmp_path / "a")
    fired = _during_copy(monkeypatch, copy.root / "edit.txt", "history copied" if elsewhere else "place ")
    audit = new_audit_id()
    outcome = Applier(store).apply([copy.read()], audit, copy.started)
    assert fired
    problems: list[str] = []
    if (copy.root / "edit.txt").read_bytes() != SOMEONE:
        problems.append("someone's file was overwritten")
    beside = [p.name for p in copy.root.iterdir() if p.name.startswith("edit.txt.mcp-guard-")]
    if not beside:
        problems.append(f"the command's tree is nowhere in the project (conflicts: {outcome.conflicts})")
    monkeypatch.setattr(faults, "point", lambda label: None)
    try:  # the old edit.txt ("before\n") must still be reachable: its undo brings it back (beside someone's)
        Applier(store).undo(audit, new_audit_id(), [str(copy.root)], force=True)
    except (HistoryError, NotApplied) as exc:
        problems.append(f"undo: {exc}")
    kept = [p for p in store.directory.iterdir() if p.suffix == ".data" and p.read_bytes() == b"before\n"]
    found = [p for p in copy.root.rglob("*") if p.is_file() and p.read_bytes() == b"before\n"]
    if not found:
        problems.append(f"the old edit.txt is not in the project after the undo (history has it unreferenced: {kept})")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("elsewhere", [True, False], ids=["history-elsewhere", "same-fs"])
def test_attack_a_file_made_while_an_undo_copies_a_tree_back_loses_no_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, elsewhere: bool
) -> None:
    if elsewhere:
        history_elsewhere(monkeypatch, tmp_path)
    copy, _before, _after = walk.applied(tmp_path / "a", "rm -r tree; echo f > tree")
    store = walk.store_at(tmp_path / "a")
    fired = _during_copy(monkeypatch, copy.root / "tree", "history copied" if elsewhere else "take ")
    problems: list[str] = []
    try:
        Applier(store).undo(walk.audit_id(1), new_audit_id(), [str(copy.root)])
        problems.append("the undo said success")
    except (HistoryError, NotApplied) as exc:
        assert str(exc)
    assert fired
    if (copy.root / "tree").read_bytes() != SOMEONE:
        problems.append("someone's file was overwritten")
    # The call's file ("f\n", what stood at tree after the call) must still be somewhere a person finds it, or the
    # call still undoable (its record naming what it replaced).
    found = [p for p in copy.root.rglob("*") if p.is_file() and p.read_bytes() == b"f\n"]
    if not found:
        monkeypatch.setattr(faults, "point", lambda label: None)
        record = store.calls.read(walk.audit_id(1))
        problems.append(
            f"the call's file 'tree' (f) is gone from the project; call record undone_by="
            f"{record.get('undone_by')!r}; history: {sorted(p.name for p in store.directory.iterdir())}"
        )
    assert not problems, "\n".join(problems)
