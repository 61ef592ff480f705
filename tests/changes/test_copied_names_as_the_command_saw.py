"""Red team 61 F3, a documented limit (docs/shell_exec.md, "Hard links"): overlayfs in a user namespace cannot index
hard links, so a project file given a second name in the call shows the command two inode numbers, and a program
that copies names of one file as one (``cp -a``) makes two files of them on the copy. What lands is what the
command saw: the copies two files with the same bytes, mode and time; the project file's names one file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_server_guard.audit import new_audit_id
from mcp_server_guard.changes.apply import Applier
from mcp_server_guard.files.history import HistoryStore
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")


def test_a_copy_keeping_links_of_names_made_in_the_call_lands_as_the_separate_files_the_command_saw(
    tmp_path: Path,
) -> None:
    copy = Copy(tmp_path / "c")
    (copy.root / "d").mkdir()
    (copy.root / "d" / "f.txt").write_text("f\n")
    changes = copy.run("ln d/f.txt d/f-link; cp -a d dcopy")
    seen = [os.lstat(copy.upper / "dcopy" / name) for name in ("f.txt", "f-link")]
    assert seen[0].st_ino != seen[1].st_ino  # what the command made on the copy: two files
    outcome = Applier(HistoryStore(tmp_path / "history", 1 << 30)).apply([changes], new_audit_id(), copy.started)
    assert not outcome.conflicts
    landed = [os.lstat(copy.root / "dcopy" / name) for name in ("f.txt", "f-link")]
    assert landed[0].st_ino != landed[1].st_ino and landed[0].st_nlink == landed[1].st_nlink == 1
    assert (copy.root / "dcopy" / "f-link").read_text() == "f\n" and landed[0].st_mtime_ns == landed[1].st_mtime_ns
    names = [os.lstat(copy.root / "d" / name) for name in ("f.txt", "f-link")]
    assert names[0].st_ino == names[1].st_ino and names[0].st_nlink == 2
