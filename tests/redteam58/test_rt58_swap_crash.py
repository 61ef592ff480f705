"""Red team 58: an undo's swap (what the call left at a path is kept, the pre-image put back) with the history on
another file system, killed right after what the call left was set aside (``history aside``) or copied
(``history copied``); before the next start someone makes a new file at that name (an editor's save). Each
failed before its fix (``steps.made_again_since``: what the call left goes beside theirs). Shapes read as data from
swap_crash.json (plain file operations on a temporary copy)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from mcp_server_guard import faults
from mcp_server_guard.audit import new_audit_id
from mcp_server_guard.changes.apply import Applier, NotApplied
from mcp_server_guard.files.history import HistoryError
from support.crashwalk import crash_walk
from support.elsewhere import history_elsewhere

walk = crash_walk("crash_walk_rt58_swap")
pytestmark = walk.pytestmark
DATA = json.loads((Path(__file__).parent / "swap_crash.json").read_text())
SOMEONE = b"someone's new file\n"


def _undo_killed_at(base: Path, copy_root: Path, prefix: str) -> None:
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            real = faults.point

            def point(label: str) -> None:
                if label.startswith(prefix):
                    os.kill(os.getpid(), signal.SIGKILL)
                real(label)

            faults.point = point
            Applier(walk.store_at(base)).undo(walk.audit_id(1), walk.audit_id(2), [str(copy_root)])
        finally:
            os._exit(3)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status), f"not killed at {prefix}: {status}"


@pytest.mark.parametrize("prefix", ["history aside", "history copied"])
@pytest.mark.parametrize("shape", sorted(DATA["scripts"]))
def test_attack_someone_saves_at_the_name_after_an_undo_swap_was_killed_in_its_keep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str, prefix: str
) -> None:
    history_elsewhere(monkeypatch, tmp_path)
    base = tmp_path / "a"
    copy, _before, _after = walk.applied(base, DATA["scripts"][shape])
    _undo_killed_at(base, copy.root, prefix)
    name = copy.root / DATA["made"][shape]
    assert not os.path.lexists(name), "the kill left something at the name"
    name.write_bytes(SOMEONE)  # someone saves a file there before the next start
    problems: list[str] = []
    store = walk.next_start(base, copy)  # (a start that raises fails the test)
    found = [p for p in copy.root.rglob("*") if p.is_file() and p.read_bytes() == SOMEONE]
    kept = [p for p in store.directory.rglob("*") if p.is_file() and p.read_bytes() == SOMEONE]
    if not found:
        problems.append(f"someone's new file is gone from the project (in the history: {kept})")
    left = sorted(p.name for p in copy.root.iterdir() if p.name.startswith(".mcp-guard-"))
    if left:
        problems.append(f"left in the project after the next start: {left}")
    record = store.calls.read(walk.audit_id(1))
    at_name = name.read_bytes() if name.is_file() else sorted(q.name for q in name.iterdir()) if name.is_dir() else None
    if not record.get("undone_by"):
        try:  # the call still stands: its undo must work (forced over someone's file)
            Applier(store).undo(walk.audit_id(1), new_audit_id(), [str(copy.root)], force=True)
        except (HistoryError, NotApplied) as exc:
            problems.append(f"the call's undo fails after the start: {exc}")
    if problems:
        listing = sorted(f"{q.relative_to(copy.root)}{'/' if q.is_dir() else ''}" for q in copy.root.rglob("*"))
        problems.append(f"undone_by={record.get('undone_by')!r}, at {name.name}: {at_name!r}; project now: {listing}")
    assert not problems, "\n".join(problems)
