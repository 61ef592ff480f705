"""Red team 181: what held (controls of the classes tried).

(Pinned: the narrowing this red team attacked was withdrawn on 2026-12-07, before it landed; these tests keep
the question it took away. Where the text says "no longer asked" or "now", read "would not be asked".)

* size 0 that hides bytes: a file emptied then deleted in one call (``: > f; rm f``, ``truncate -s0``), replaced by
  an empty one then deleted, an empty file renamed over one that held bytes then deleted, a sparse file (its size
  counts), a hard link — all asked (the size judged is the real file's, before the command);
  (the inode moves into the history; on another file system the copy keeps it);
* a link into HOME through a real dangling link outside HOME (``/x/cur -> ~/.newtool``): resolved, asked.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work
from support.link_judging import judged_links, link_asks

POLICY = load_policy()
SCRIPTS = {
    "emptied_then_deleted": ": > notes.txt; rm notes.txt",
    "truncated_then_deleted": "truncate -s0 notes.txt && rm notes.txt",
    "replaced_by_empty_then_deleted": "rm notes.txt; touch notes.txt; rm notes.txt",
    "empty_renamed_over_then_deleted": "mv -f empty.txt notes.txt; rm notes.txt",
    "sparse_deleted": "rm sparse",
    "hard_linked_emptied_deleted": "ln notes.txt n2 && rm notes.txt && : > n2 && rm n2",
}


@pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
@pytest.mark.parametrize("name", list(SCRIPTS))
def test_control_size_zero_at_the_end_of_the_command_is_not_the_size_judged(tmp_path: Path, name: str) -> None:
    copy = Copy(tmp_path)
    subprocess.run(["git", "init", "-q", str(copy.root)], check=True)
    (copy.root / "empty.txt").write_bytes(b"")
    (copy.root / "notes.txt").write_text("work nobody committed\n")
    (copy.root / "sparse").write_bytes(b"")
    os.truncate(copy.root / "sparse", 1 << 20)
    judged = judge([copy.run(SCRIPTS[name])], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    assert any(a.startswith("Git has no copy of") for a in judged.asks), judged.asks


@pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
def test_control_a_link_into_home_through_a_dangling_link_outside_home_is_asked(tmp_path: Path) -> None:
    outside = tmp_path / "x"
    outside.mkdir()
    (outside / "cur").symlink_to(Path(os.environ["HOME"]) / ".rt181-newtool")  # (missing: dangling)
    judged = judged_links(tmp_path / "c", {"dist/config": str(outside / "cur" / "config")})
    assert link_asks(judged), judged.asks
