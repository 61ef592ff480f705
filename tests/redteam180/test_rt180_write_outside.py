"""Red team 180: the write-outside change (4ba393d, 4b96aae, 5f89d5d) judged without a copy (plain).

The machine is the red team's: home /home/u, the project /home/u/proj. Lines are judged, never run; they travel as
data (rt180_lines.json beside this file). Each finding's test fails on 5f89d5d; its controls pass.

F1 (MEDIUM): a path under /proc is skipped as a "stream" (outside._STREAMS), yet /proc/self/root/<path> and
    /proc/self/cwd/../<path> name ordinary files outside the project: truncate, cp /dev/null, ln -sf, tee, a redirect
    or chmod through them run with no question, while rm of the same spelling is refused.
F2 (MEDIUM): mode_findings parses chmod/chown/chgrp with chattr's and setfacl's value-taking options (-v, -p, -x,
    -X, -m ...): `chown -v nobody F` takes "nobody" as -v's value and drops F as the owner; `chmod 000 -v F` takes F
    as -v's value; `chmod -rwx F` / `chmod -x F` (GNU chmod's dashed modes) take F as -x's value.
F3 (MEDIUM): writers the table does not know write over a file outside with no question: shuf -o, fallocate
    --punch-hole, find -fprint/-fprintf, cc -o, uudecode -o, git diff --output, git archive -o, 7z x -o -aoa,
    git -C ../other checkout -- FILE.
F4 (LOW): lines that lose nothing are asked as writing over a file outside: touch, >> and tee -a.

Answered: only a process's own descriptors under /proc are streams (``/proc/self/cwd/…`` is asked: after a ``cd`` it
may lie anywhere, so the red team's control for it was dropped); each mode changer parsed with its own options;
shuf, fallocate, uudecode, the compilers' -o, find -fprint*, git diff/show/log/format-patch --output, git archive -o,
git bundle create, 7z -oDIR and git's work-tree subcommands with -C/--work-tree outside are writers
(``outside.outside_findings``); touch, ``>>`` and ``tee -a`` lose nothing and are not asked.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_server_guard.policy import load_policy
from mcp_server_guard.shell.strings.rules import PolicyEngine

_POLICY = load_policy().shell_exec
PLAIN = PolicyEngine(_POLICY, home="/home/u", roots=("/home/u/proj",))


def _lines(kind: str) -> list[str]:
    text = (Path(__file__).parent / "rt180_lines.json").read_text(encoding="utf-8")
    return list(json.loads(text)[kind])


# F1 -------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("line", _lines("f1_proc_spellings"))
def test_f1_a_file_outside_spelled_through_proc_is_asked(line: str) -> None:
    verdict = PLAIN.decide(line)
    assert verdict.action in ("ask", "deny"), (line, verdict)


@pytest.mark.parametrize("line", _lines("f1_controls_asked"))
def test_f1_control_the_same_file_spelled_plainly_is_asked(line: str) -> None:
    verdict = PLAIN.decide(line)
    assert (verdict.action, verdict.rule) == ("ask", "write-outside"), (line, verdict)


@pytest.mark.parametrize("line", _lines("f1_controls_denied"))
def test_f1_control_rm_through_proc_is_refused(line: str) -> None:
    assert PLAIN.decide(line).action == "deny", line


@pytest.mark.parametrize("line", _lines("f1_controls_allowed"))
def test_f1_control_streams_and_the_project_through_proc_stay_allowed(line: str) -> None:
    assert PLAIN.decide(line).action == "allow", (line, PLAIN.decide(line))


# F2 -------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("line", _lines("f2_mode_option_values"))
def test_f2_a_mode_or_owner_changed_outside_with_a_verbose_or_dashed_mode_is_asked(line: str) -> None:
    verdict = PLAIN.decide(line)
    # (asked, or refused where a stronger rule holds: `chown -Rv nobody ~/Documents` is recursive-mode-owner-broad)
    assert verdict.action == "deny" or (verdict.action, verdict.rule) == ("ask", "write-outside"), (line, verdict)


@pytest.mark.parametrize("line", _lines("f2_controls_asked"))
def test_f2_control_the_same_change_spelled_otherwise_is_asked(line: str) -> None:
    verdict = PLAIN.decide(line)
    assert (verdict.action, verdict.rule) == ("ask", "write-outside"), (line, verdict)


@pytest.mark.parametrize("line", _lines("f2_controls_allowed"))
def test_f2_control_mode_changes_in_the_project_stay_allowed(line: str) -> None:
    assert PLAIN.decide(line).action == "allow", (line, PLAIN.decide(line))


# F3 -------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("line", _lines("f3_unknown_writers"))
def test_f3_an_unknown_writer_writing_over_a_file_outside_is_asked(line: str) -> None:
    verdict = PLAIN.decide(line)
    assert verdict.action in ("ask", "deny"), (line, verdict)


@pytest.mark.parametrize("line", _lines("f3_controls_asked"))
def test_f3_control_known_writers_outside_are_asked(line: str) -> None:
    assert PLAIN.decide(line).action == "ask", (line, PLAIN.decide(line))


@pytest.mark.parametrize("line", _lines("f3_controls_allowed"))
def test_f3_control_the_same_writers_in_the_project_stay_allowed(line: str) -> None:
    assert PLAIN.decide(line).action == "allow", (line, PLAIN.decide(line))


# F4 -------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("line", _lines("f4_no_content_lost"))
def test_f4_touch_and_appends_outside_lose_nothing_and_are_not_asked_as_writing_over(line: str) -> None:
    verdict = PLAIN.decide(line)
    assert verdict.rule != "write-outside", (line, verdict)


@pytest.mark.parametrize("line", _lines("f4_controls_asked"))
def test_f4_control_an_overwrite_outside_is_asked(line: str) -> None:
    verdict = PLAIN.decide(line)
    assert (verdict.action, verdict.rule) == ("ask", "write-outside"), (line, verdict)
