"""Issue 42 claim 7: "history call records stay within history_max_bytes"; docs/configuration.md:
``history_max_bytes`` — "bound of the history store: bytes it uses on disk (data and metadata of every entry)";
files/history.py: the bounds count "the call records"; docs/shell_exec.md "Bounds refuse, they do not evict ...
A call never evicts its own pre-images".

Case: a command creates many files with long names in an existing directory (no pre-image at all: every change is
a ``create``). Its call record (``calls/<auditId>.json``: one line per created path, for undo) is far larger than
``history_max_bytes``. Observed: applied; the history store then holds more than its bound (or the call just applied
is evicted at once and its ``mcp-guard undo`` fails). Expected: refused before any change, or the store stays within
its bound with the call undoable.
Guessed cause: ``Applier._room`` counts only pre-images (``modify``/``delete``/opaque ops) — ``room(0, 0)`` for a
create-only change set — while the call record grows with every created path."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.redteam import SX, call, disk_used, mcp_guard, started

BOUND = 262144
N = 1500


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
def test_create_only_call_record_stays_within_history_max_bytes(workspace: Path, tmp_path: Path) -> None:
    root, state = workspace, tmp_path / "state"
    (root / "gen").mkdir()
    (root / "gen" / "keep.txt").write_text("an existing directory\n")
    (root / ".t").mkdir()
    (root / ".t" / "many.py").write_text(
        f"import os\nfor i in range({N}):\n    open(os.path.join('gen', 'n%05d_' % i + 'x' * 200), 'w').write('x')\n"
    )
    policy = tmp_path / "p.toml"
    policy.write_text(f"[file_write]\nhistory_max_bytes = {BOUND}\n", encoding="utf-8")
    raw = started(SX, root, state, "--policy", str(policy))
    try:
        result = call(raw, 2, "shell_exec", {"command": "python3 .t/many.py", "timeoutSeconds": 60}, timeout=120)
    finally:
        raw.close()
    structured = result["structuredContent"]
    if structured["transaction"] != "applied":
        return  # refused before any change: what the bound promises
    used = disk_used(state / "history")
    biggest = max((p for p in (state / "history").rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)
    undo = structured["changes"]["undo"].split()[-1]
    done = mcp_guard("undo", undo, "--history-dir", str(state / "history"), "--audit-log", str(state / "audit.jsonl"))
    assert used <= BOUND and done.returncode == 0, (
        f"history holds {used} bytes on disk, bound {BOUND} (largest: {biggest.relative_to(state)}, "
        f"{biggest.stat().st_size} B); undo: rc={done.returncode} {done.stderr[-300:]}"
    )
