"""Red team 92 F3 (issue 42, claim 1: every mode change is judged by what it grants): a symlink replaced by a file
or a directory writable by others is not asked.

``refusals.judge_modes`` takes ``extra = mode & ~old_mode`` for a modify — and a symlink's ``old_mode`` is 0777, so
nothing a file put in a link's place grants is "extra": ``rm notes && printf .. > notes && chmod 666 notes`` goes
unasked (the summary only says "change the mode of notes to 0666"), while the same mode on a new path is asked
"makes ... writable by others". (A directory in a link's place HELD: it is read as a deletion and a creation.)

Safe behaviour: judged against what a new path would get (the umask), as a link has no mode of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import Judgement, judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

POLICY = load_policy()


def _judged(tmp_path: Path, script: str) -> Judgement:
    copy = Copy(tmp_path)
    (copy.root / "shared").mkdir()
    (copy.root / "data.txt").write_text("plain\n")
    (copy.root / "cfg").symlink_to("shared")
    (copy.root / "notes").symlink_to("data.txt")
    changes = copy.run(script)
    return judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)])


@pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
def test_control_a_new_world_writable_directory_is_asked(tmp_path: Path) -> None:
    judged = _judged(tmp_path, "mkdir -m 777 other")
    assert any("writable by others" in a for a in judged.asks), judged.asks


@pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
def test_control_held_a_link_replaced_by_a_world_writable_directory_is_asked(tmp_path: Path) -> None:
    judged = _judged(tmp_path, "rm cfg && mkdir -m 777 cfg")
    assert any("writable by others" in a and "cfg" in a for a in judged.asks), (judged.asks, judged.summary)


@pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
def test_a_link_replaced_by_a_world_writable_file_is_asked(tmp_path: Path) -> None:
    judged = _judged(tmp_path, "rm notes && printf 'x\\n' > notes && chmod 666 notes")
    assert any("writable by others" in a and "notes" in a for a in judged.asks), (judged.asks, judged.summary)
