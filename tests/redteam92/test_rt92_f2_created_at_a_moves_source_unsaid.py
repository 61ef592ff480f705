"""Red team 92 F2 (issue 42: a summary a person relies on says less than what happened): a file created where a
moved file came from is left out of the summary and of the counts.

``mv d/a.txt e.txt && rm -rf d && mkdir d && <5000 bytes> > d/a.txt``: the change set holds a deletion of
``d/a.txt`` (the move's source) AND a creation of ``d/a.txt`` (new bytes). ``moves`` is keyed by (root, path), and
``summary.moved_here`` says "an end of a move" for every change at a key in ``moves`` that is not a deletion — so
the *creation* of the new ``d/a.txt`` is taken for the move's end: not counted as created, not named. The summary
reads "move 1 file under d/", counts.created == 0 — the 5000-byte file it also made is nowhere.
(The mirror of red team 91 F1, which fixed only the deletion side.)

Safe behaviour: the summary says a file was created (counts.created == 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

POLICY = load_policy()
SCRIPT = "mv d/a.txt e.txt && rm -rf d && mkdir d && head -c 5000 /dev/zero > d/a.txt"


@pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
def test_a_file_made_where_a_moved_file_came_from_is_counted_and_said(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    (copy.root / "d").mkdir()
    (copy.root / "d" / "a.txt").write_text("user a\n")
    changes = copy.run(SCRIPT)
    assert {(c.path, c.action) for c in changes.changes} >= {("d/a.txt", "delete"), ("d/a.txt", "create")}
    judged = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    assert judged.counts.moved == 1
    assert judged.counts.created == 1 and "create 1 file" in judged.summary, (judged.summary, judged.counts)
