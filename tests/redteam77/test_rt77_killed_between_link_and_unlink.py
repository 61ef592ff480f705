"""Red team 77: a server killed (SIGKILL) in ``Journal.create`` after ``os.link(temp, path)`` and before
``temp.unlink()`` leaves ``.journal/.apply-<id>.<pid>.tmp``: a second name of the journal's inode, holding the room
allocated beyond its end (up to 64 MiB). The next start finishes the journal and removes its real name; nothing ever
removes the temp name (recovery sweeps ``reserve-*`` only), so every such kill keeps the journal's bytes and its
room on the history's disk for good.

The child's lines are plain file operations on a temporary copy (data, never harmful)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from mcp_server_guard.changes.recovery import recover
from mcp_server_guard.files.history import HistoryStore
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work() or os.getuid() != 0, reason="needs root and overlays")

CHILD = Path(__file__).with_name("rt77_child_killed_after_link.py")


def test_temp_name_of_a_journal_is_swept() -> None:
    base = Path(tempfile.mkdtemp(prefix="rt77-"))
    try:
        copy = Copy(base)
        (copy.root / "old.txt").write_text("old\n")
        copy.run("echo new > new.txt")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        argv = [sys.executable, str(CHILD), str(base), str(copy.started)]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, check=False)
        assert done.returncode == -9, done.stderr
        journals = base / "history" / ".journal"
        assert any(p.name.startswith("apply-") for p in journals.iterdir()), sorted(os.listdir(journals))
        store = HistoryStore(base / "history", 1 << 30)
        try:
            recover(store, [str(copy.root)], [str(copy.upper)])
            store.sweep()
        finally:
            store.close()
        left = {p.name: p.stat().st_blocks * 512 for p in journals.iterdir()}
        assert not left, f"left in .journal after the next start (name: bytes held): {left}"
    finally:
        shutil.rmtree(base, ignore_errors=True)
