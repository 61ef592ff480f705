"""Child of test_rt77_killed_between_link_and_unlink: applies the copy at argv[1] and dies (SIGKILL, its own pid
only) right after the journal is linked to its name."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from mcp_server_guard.changes.apply import Applier
from mcp_server_guard.files.history import HistoryStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from support.copies import Copy

base = Path(sys.argv[1])
real_link = os.link


def link_then_die(src: object, dst: object, *args: object, **kwargs: object) -> None:
    real_link(src, dst, *args, **kwargs)  # type: ignore[arg-type]
    if str(dst).endswith(".json") and "/.journal/" in str(dst):
        os.kill(os.getpid(), signal.SIGKILL)


os.link = link_then_die
copy = Copy(base)
copy.started = int(sys.argv[2])
Applier(HistoryStore(base / "history", 1 << 30)).apply([copy.read()], "00000000000c", copy.started)
