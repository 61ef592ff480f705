"""Red team 63 F1: a directory the command made and left with no read or search permission for its owner (``chmod
0 nd``, 0300, 0100; empty or not) landed as 0700, said "applied", nothing said: reading the copy let the directory
in (``trees.open_own_dir`` gives u+rwx) and never gave the mode back. Now a walk or a landing of the copy gives each
such directory its mode back at its end (``trees.own_dirs_as_found``), and the entries below it land as the others
(overlayfs's attributes taken off them too). The server runs as a user: as root these tests run again without
CAP_DAC_OVERRIDE (``support.as_a_user``). The command lines are data (rt63_new_dirs.json)."""

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

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
SCRIPTS = json.loads((Path(__file__).parent / "rt63_new_dirs.json").read_text())
MODES = {"new-dir-000-empty": 0, "new-dir-000-with-file": 0, "new-dir-0300-with-file": 0o300,
         "new-dir-0100-with-file": 0o100, "new-read-only-dir-with-file": 0o555}  # fmt: skip


def test_new_directories_without_permission_as_a_user(tmp_path: Path) -> None:
    again_as_a_user(__file__, tmp_path)


def _opened_up(top: Path) -> list[str]:
    """Every path below ``top`` (its directories given u+rwx to be walked), and no overlay attribute on any."""
    found = []
    for directory, dirs, files in os.walk(top):
        for d in dirs:
            os.chmod(os.path.join(directory, d), 0o700)
        for entry in dirs + files:
            path = os.path.join(directory, entry)
            assert not [a for a in os.listxattr(path, follow_symlinks=False) if a.startswith("user.overlay.")], path
            found.append(os.path.relpath(path, top))
    return sorted(found)


@as_a_user
@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_a_new_directory_its_owner_may_not_read_lands_with_the_mode_the_command_gave_it(
    tmp_path: Path, script: str
) -> None:
    copy = Copy(tmp_path / "c")
    (copy.root / "keep.txt").write_text("k\n")
    changes = copy.run(SCRIPTS[script])
    outcome = Applier(HistoryStore(tmp_path / "history", 1 << 30)).apply([changes], new_audit_id(), copy.started)
    assert not outcome.conflicts, outcome.conflicts
    assert os.lstat(copy.root / "nd").st_mode & 0o7777 == MODES[script]
    os.chmod(copy.root / "nd", 0o700)
    inside = _opened_up(copy.root / "nd")
    assert inside == {"new-dir-000-empty": [], "new-dir-0100-with-file": ["in", "in/f"]}.get(script, ["f"]), inside
    os.chmod(copy.root / "nd", MODES[script])


@as_a_user
def test_the_undo_of_a_call_that_made_a_read_only_tree_takes_it_away(tmp_path: Path) -> None:
    """Red team 63 F6: ``mkdir nd; echo x > nd/f; chmod 555 nd`` landed, and its undo said "not removed: Permission
    denied": moving a directory to another (the history) writes its ``..``. Now such a rename is tried again with
    u+w given to the directories of this user's in its way (``kept.as_owner``), their modes put back."""
    copy = Copy(tmp_path / "c")
    (copy.root / "keep.txt").write_text("k\n")
    changes = copy.run(SCRIPTS["new-read-only-dir-with-file"])
    store = HistoryStore(tmp_path / "history", 1 << 30)
    call, undo = new_audit_id(), new_audit_id()
    assert not Applier(store).apply([changes], call, copy.started).conflicts
    Applier(store).undo(call, undo, [str(copy.root)])
    assert sorted(os.listdir(copy.root)) == ["keep.txt"]
    Applier(store).undo(undo, new_audit_id(), [str(copy.root)])  # the redo puts it back, read-only
    assert os.lstat(copy.root / "nd").st_mode & 0o7777 == 0o555 and (copy.root / "nd" / "f").read_text() == "x\n"
