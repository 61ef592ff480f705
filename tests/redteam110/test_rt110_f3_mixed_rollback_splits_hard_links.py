"""Red team 110 F3: a session mixing the tools, rolled back newest first, splits the user's hard links and every
``mcp-guard undo`` exits 0. The user's ``a.txt`` and ``b.txt`` are one file (two names). A command takes one name
away (``rm a.txt``, or ``mv d.txt a.txt``); file_write then rewrites ``b.txt`` (one name by then); the undo of the
file_write puts back a copy of ``b.txt``'s bytes (a new inode), and the command's undo, finding ``b.txt`` no longer
the file ``a.txt`` was a name of, brings ``a.txt`` back as a file of its own. Bytes are the same; the two names are
two files now: the user's next edit of one no longer shows in the other (a shared config, a deduplicated tree).

Red team 109 F1 answered a file_write alone on a file with other names; this is its undo taking part in an earlier
call's repair. Control: the same two steps made by two shell_exec calls (the second one replacing ``b.txt`` by a
rename, a new inode too) roll back with the names one file again. A person declines every question (none is asked)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from support import serve
from support.boxed import Person, run, shell, snap
from support.redteam import mcp_guard

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

FW = "mcp-server-file-write"
STEPS: dict[str, list[tuple[str, str]]] = {
    "rm_then_file_write": [("sh", "rm a.txt"), ("fw", "b.txt")],
    "mv_over_then_file_write": [("sh", "mv d.txt a.txt"), ("fw", "b.txt")],
    "control_two_commands": [("sh", "rm a.txt"), ("sh", "echo fw > t && mv t b.txt")],
}


async def _step(root: Path, kind: str, what: str) -> str:
    if kind == "sh":
        async with shell(root, Person(False)) as client:
            result: dict[str, Any] = await run(client, what, cwd=str(root))
        assert result["transaction"] == "applied", result
        return str(result["auditId"])
    async with serve(FW, root) as client:
        written = await client.call_tool("file_write", {"path": str(root / what), "content": "fw\n", "overwrite": True})
    assert not written.is_error, written
    return str(dict(written.structured_content or {})["auditId"])


@pytest.mark.parametrize("case", sorted(STEPS))
async def test_newest_first_rollback_gives_back_the_same_tree(tmp_path: Path, case: str) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.txt").write_text("the user's shared settings\n")
    os.link(root / "a.txt", root / "b.txt")
    (root / "d.txt").write_text("d\n")
    before = snap(root)
    ids = [await _step(root, kind, what) for kind, what in STEPS[case]]
    undone = [mcp_guard("undo", audit_id) for audit_id in reversed(ids)]
    assert [u.returncode for u in undone] == [0] * len(ids), [u.stderr[-300:] for u in undone]
    after = snap(root)
    differ = {
        k: (before.get(k), after.get(k)) for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k)
    }
    same_file = os.stat(root / "a.txt").st_ino == os.stat(root / "b.txt").st_ino
    assert same_file and not differ, (same_file, differ)
