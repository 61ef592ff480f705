"""Red team 63 F4, F5: project entries their owner may not write (a 0555 tree, a 0444 file). Removing a read-only
tree (``chmod -R u+w rodir; rm -r rodir``) or renaming it over an empty directory was a false conflict ("not
deleted: Permission denied": moving a directory to another, the history, writes its ``..``); a ``user.*``
attribute set on a read-only file or directory (``chmod u+w``, ``setfattr``, ``chmod`` back) was a conflict, not
set. Now the history's renames are tried again with u+w given (``kept.as_owner``), and ``nofollow.set_meta`` gives
the entry u+w while it writes attributes, modes put back. Each lands, and its undo gives the tree back exactly. As
root these tests run again without CAP_DAC_OVERRIDE (``support.as_a_user``). The command lines are data
(rt63_read_only.json)."""

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
from support.fidelity import differences, snapshot

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
SCRIPTS = json.loads((Path(__file__).parent / "rt63_read_only.json").read_text())


def test_read_only_project_entries_as_a_user(tmp_path: Path) -> None:
    again_as_a_user(__file__, tmp_path)


@as_a_user
@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_a_change_to_a_read_only_project_entry_lands_and_undoes_exactly(tmp_path: Path, script: str) -> None:
    copy = Copy(tmp_path / "c")
    (copy.root / "rodir" / "sub").mkdir(parents=True)
    (copy.root / "rodir" / "f").write_text("f\n")
    (copy.root / "rodir" / "sub" / "g").write_text("g\n")
    (copy.root / "ro.txt").write_text("r\n")
    (copy.root / "ro.txt").chmod(0o444)
    (copy.root / "rodir" / "sub").chmod(0o555)
    (copy.root / "rodir").chmod(0o555)
    before = snapshot(copy.root)
    changes = copy.run(SCRIPTS[script])
    store = HistoryStore(tmp_path / "history", 1 << 30)
    call = new_audit_id()
    outcome = Applier(store).apply([changes], call, copy.started)
    assert not outcome.conflicts, outcome.conflicts
    if "setfattr" in SCRIPTS[script]:
        where = copy.root / ("ro.txt" if "ro.txt" in SCRIPTS[script] else "rodir")
        assert os.getxattr(where, "user.k") == b"v"
    Applier(store).undo(call, new_audit_id(), [str(copy.root)])
    found = differences(before, snapshot(copy.root))
    assert not found, found
