"""Red team 64 F1: with the history on another file system, as a user, a file deleted from a read-only directory
(``chmod u+w d; rm d/f; chmod 555 d``) vanished under its aside name (``.mcp-guard-<entry>.keep``, left in the
project), the step said "not deleted", and the undo said success without it; the undo of a file made in such a
directory was refused and left that file under the aside name. Removing what was copied into the history now gives
the directory u+w for it (``kept.remove_entry``), and a keep that copied but could not remove puts the entry back
where it was (the copy let go). Each script: applied, undone, redone — the tree exactly as before and after, no
stray name; with the history on the same file system too. Command lines are data (rt64_read_only_elsewhere.json);
the module runs again without CAP_DAC_OVERRIDE (``support.as_a_user``)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from mcp_server_guard.audit import new_audit_id
from mcp_server_guard.changes.apply import Applier
from mcp_server_guard.files.history import HistoryStore
from support.as_a_user import again_as_a_user, as_a_user, snapshot_unopened
from support.copies import Copy, overlays_work
from support.elsewhere import history_elsewhere
from support.fidelity import differences

pytestmark = pytest.mark.skipif(
    not overlays_work() or shutil.which("unshare") is None, reason="no user namespaces for an overlay here"
)
SCRIPTS = json.loads((Path(__file__).parent / "rt64_read_only_elsewhere.json").read_text())
OLD = 1_000_000_000 * 10**9


def project(root: Path) -> None:
    (root / "rodir").mkdir(parents=True)
    (root / "rodir" / "f").write_text("f\n")
    (root / "ro.txt").write_text("r\n")
    (root / "secret").write_text("s\n")
    for p in [root / "rodir" / "f", root / "rodir", root / "ro.txt", root / "secret", root]:
        os.utime(p, ns=(OLD, OLD))
    (root / "ro.txt").chmod(0o444)
    (root / "secret").chmod(0o000)
    (root / "rodir").chmod(0o555)


def test_read_only_entries_with_the_history_elsewhere_as_a_user(tmp_path: Path) -> None:
    again_as_a_user(__file__, tmp_path)


def _stray(root: Path) -> list[str]:
    return [p for p in os.listdir(root / "rodir") if ".mcp-guard-" in p] if (root / "rodir").is_dir() else []


@as_a_user
@pytest.mark.parametrize("elsewhere", [False, True], ids=["same-fs", "history-elsewhere"])
@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_attack_a_deletion_in_a_read_only_directory_is_kept_whole_and_undone_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str, elsewhere: bool
) -> None:
    if elsewhere:
        history_elsewhere(monkeypatch, tmp_path)
    copy = Copy(tmp_path / "c")
    project(copy.root)
    before = snapshot_unopened(copy.root)
    changes = copy.run(SCRIPTS[script])
    store = HistoryStore(tmp_path / "history", 1 << 30)
    call, undo_id = new_audit_id(), new_audit_id()
    outcome = Applier(store).apply([changes], call, copy.started)
    assert not outcome.conflicts and not _stray(copy.root), (outcome.conflicts, _stray(copy.root))
    after = snapshot_unopened(copy.root)
    Applier(store).undo(call, undo_id, [str(copy.root)])
    found = differences(before, snapshot_unopened(copy.root), all_mtimes=True)
    assert not _stray(copy.root) and not found, (_stray(copy.root), found)
    Applier(store).undo(undo_id, new_audit_id(), [str(copy.root)])
    found = differences(after, snapshot_unopened(copy.root), all_mtimes=True)
    assert not _stray(copy.root) and not found, (_stray(copy.root), found)
