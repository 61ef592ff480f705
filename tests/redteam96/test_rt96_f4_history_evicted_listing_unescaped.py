"""Red team 96 F4 (claim E: "text that reaches a person (errors, summaries, questions, audit and history output,
--json) has control and bidi characters escaped").

``mcp-guard history`` escapes each call's line (``paths.printable``), but the lines of the calls evicted to keep the
history within its bounds print their ``audit_id``, ``time``, ``tool`` and ``evicted`` fields raw
(``admin/app.py:history_calls``; only ``command`` goes through ``printable``). Red team 94 left it because only a
server writes ``calls/evicted.jsonl``; but a history store is just files in a state directory, and a state directory
the registry has forgotten (``registry._prune``, F1 of this report) can be made by another server's command with
whatever ``calls/evicted.jsonl`` it likes: the person's terminal then runs the escape sequences it holds (a window
title, a hyperlink that says one thing and opens another, text hidden or reordered by bidi controls).

Safe behaviour: every field of the evicted lines escaped as the calls' lines are.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from support.redteam import mcp_guard

TOOL = "shell_exec\x1b]8;;https://example.invalid/\x07undo me\x1b]8;;\x07\x1b[2K\u202e"


def test_the_evicted_calls_listing_escapes_what_it_prints(tmp_path: Path) -> None:
    history = tmp_path / "state" / "history"
    (history / "calls").mkdir(parents=True)
    for directory in (history.parent, history, history / "calls"):
        os.chmod(directory, 0o700)
    line = {"audit_id": "0123456789ab\x1b[31m", "time": "2026-01-01T00:00:00\x1b[8m", "tool": TOOL,
            "command": "true", "paths": 1, "evicted": "2026-01-02T00:00:00"}  # fmt: skip
    (history / "calls" / "evicted.jsonl").write_text(json.dumps(line) + "\n")
    done = mcp_guard("history", "--history-dir", str(history))
    shown = done.stdout + done.stderr
    assert "evicted" in shown, shown
    bidi = "\u202a\u202b\u202c\u202d\u202e"
    raw = [c for c in shown if (ord(c) < 0x20 and c not in "\n\t") or c == "\x7f" or c in bidi]
    assert not raw, f"mcp-guard history printed raw control or bidi characters: {shown!r}"
