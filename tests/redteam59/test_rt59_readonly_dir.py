"""Red team 59 F1: a tree holding a read-only directory (a Go module cache: Go makes its module directories 0555;
any ``chmod -w``), deleted into a history on another file system — by a command (``chmod -R u+w tree; rm -r
tree``) or by an undo of a call that made it (``mkdir -p gen/ro ...; chmod 555 gen/ro``); the scripts are data,
tests/redteam59/readonly.json. The tree is renamed aside (``.mcp-guard-<entry>.keep``), copied, then removed with
``remove_below``, which could not unlink inside the read-only directory (it logged and left it): the aside name,
with the read-only directory's files, stayed in the project for good, and the apply / undo said success. Now
``trees._emptiable`` gives this user's directories write permission before it empties them. (With the history on
the project's file system, one rename into it, nothing was ever left.)

The server runs as a user, without CAP_DAC_OVERRIDE: as root these tests run again without it
(``support.as_a_user``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mcp_server_guard.audit import new_audit_id
from mcp_server_guard.changes.apply import Applier
from mcp_server_guard.files.history import HistoryStore
from support.as_a_user import again_as_a_user, as_a_user
from support.copies import Copy, overlays_work
from support.elsewhere import history_elsewhere
from support.fidelity import differences, snapshot

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
SCRIPTS = json.loads((Path(__file__).parent / "readonly.json").read_text())


def test_read_only_dirs_as_a_user(tmp_path: Path) -> None:
    again_as_a_user(__file__, tmp_path)


def _open_up(top: Path) -> None:
    for directory, dirs, _files in os.walk(top):
        for d in dirs:
            p = os.path.join(directory, d)
            if not os.path.islink(p):
                os.chmod(p, 0o755)


def _populate(root: Path) -> None:
    ro = root / "tree" / "ro"
    ro.mkdir(parents=True)
    (root / "tree" / "a.txt").write_text("a\n")
    for i in range(3):
        (ro / f"m{i}.go").write_text(f"package m{i}\n")
    ro.chmod(0o555)


@as_a_user
@pytest.mark.parametrize("script", ["delete-tree-with-readonly-dir", "make-tree-with-readonly-dir"])
def test_a_read_only_dir_deleted_or_undone_into_a_history_elsewhere_leaves_nothing_and_undoes_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str
) -> None:
    history_elsewhere(monkeypatch, tmp_path)
    copy = Copy(tmp_path / "c")
    deleting = script.startswith("delete")
    if deleting:
        _populate(copy.root)
    else:
        (copy.root / "keep.txt").write_text("k\n")
    before = snapshot(copy.root)
    changes = copy.run(SCRIPTS[script])
    store = HistoryStore(tmp_path / "history", 1 << 30)
    call = new_audit_id()
    try:
        outcome = Applier(store).apply([changes], call, copy.started)
        assert not outcome.conflicts, outcome.conflicts
        left = sorted(os.listdir(copy.root))
        assert not deleting or left == [], f"the apply said success; the project holds {left}"
        Applier(store).undo(call, new_audit_id(), [str(copy.root)])
        diff = differences(before, snapshot(copy.root))
        assert not diff, "the undo said success, yet: " + "; ".join(diff[:5])
    finally:
        _open_up(tmp_path)
