"""Without a copy, a file outside the allowed directories written over is asked about (red team 179).

Without the box (``--sandbox off``, ``--mode full-access``) the string rules are the only guard and nothing can be
undone: ``rm`` of a file outside the project was refused, yet emptying or replacing it (``truncate -s 0``,
``cp /dev/null``, ``ln -sf /dev/null``, ``sort -o``, ``tee``, ``dd of=``, a redirect) ran with no question. A write
outside the allowed directories is now asked (``write-outside``), except in the box's own places (the call's /tmp),
the streams and devices and the home's caches; on a copy the box keeps those places read-only, and it is not asked.
So is a change of the mode, owner, ACL or attributes of a file there (``chmod``, ``chown``, ``chgrp``, ``setfacl``,
``chattr``), and a file a formatter or converter rewrites in place (``black ../x.py``, ``gofmt -w``, ``yq -i``,
``strip``: red team 180's leads). ``fuser -k`` is asked like the other killers, ``git worktree remove`` outside the
project refused like ``rm -r``. A home directory under /tmp is the user's, never the box's scratch. The lines travel
as data (tests/corpus/red_team_179.json); the machine is the red team's: home /home/u, the project /home/u/proj.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_server_guard.policy import load_policy
from mcp_server_guard.shell.strings.rules import PolicyEngine

_POLICY = load_policy().shell_exec
PLAIN = PolicyEngine(_POLICY, home="/home/u", roots=("/home/u/proj",))
ON_A_COPY = PolicyEngine(_POLICY, effects=True, home="/home/u", roots=("/home/u/proj",))
# A home directory under /tmp (a test's, a sandbox's): the project beside it.
HOME_IN_TMP = PolicyEngine(_POLICY, home="/tmp/u", roots=("/tmp/proj",))


def _lines(kind: str) -> list[str]:
    text = (Path(__file__).parent.parent / "corpus" / "red_team_179.json").read_text(encoding="utf-8")
    return list(json.loads(text)[kind])


@pytest.mark.parametrize("line", _lines("writes_over_files_outside"))
def test_attack_a_file_outside_written_over_without_a_copy_is_asked(line: str) -> None:
    verdict = PLAIN.decide(line)
    assert (verdict.action, verdict.rule) == ("ask", "write-outside"), (line, verdict)


@pytest.mark.parametrize("line", _lines("writes_over_files_outside"))
def test_on_a_copy_a_write_outside_is_left_to_the_box(line: str) -> None:
    verdict = ON_A_COPY.decide(line)
    assert verdict.action == "allow", (line, verdict)


@pytest.mark.parametrize("line", _lines("writes_that_stay_in_the_project_or_scratch"))
def test_writes_in_the_project_the_boxs_own_places_or_the_caches_are_not_asked(line: str) -> None:
    verdict = PLAIN.decide(line)
    assert verdict.action == "allow", (line, verdict)


@pytest.mark.parametrize("line", _lines("modes_changed_outside"))
def test_attack_a_mode_owner_or_acl_changed_outside_without_a_copy_is_asked(line: str) -> None:
    # (red team 179's leads: `chmod -R 000 ~/Documents`, `chown -R`, `setfacl -b`, `chattr +i` outside the project)
    verdict = PLAIN.decide(line)
    assert (verdict.action, verdict.rule) == ("ask", "write-outside"), (line, verdict)
    assert ON_A_COPY.decide(line).action == "allow", (line, ON_A_COPY.decide(line))


@pytest.mark.parametrize("line", _lines("modes_changed_in_the_project_or_scratch"))
def test_modes_changed_in_the_project_or_scratch_are_not_asked_beforehand(line: str) -> None:
    verdict = PLAIN.decide(line)
    assert verdict.action == "allow", (line, verdict)


@pytest.mark.parametrize("copy", [False, True])
def test_in_the_read_only_list_a_redirect_outside_is_refused_as_the_write_it_is(copy: bool) -> None:
    # (the write-outside finding comes beside write-redirect, never in its place: readonly refuses every redirect)
    readonly = PolicyEngine(
        load_policy(Path("readonly")).shell_exec, effects=copy, home="/home/u", roots=("/home/u/proj",)
    )
    verdict = readonly.decide("echo x > ~/Documents/report.txt")
    assert (verdict.action, verdict.rule) == ("deny", "no-file-writes"), verdict


@pytest.mark.parametrize("line", _lines("kill_what_holds_a_file"))
def test_attack_fuser_killing_what_holds_a_file_is_asked(line: str) -> None:
    verdict = PLAIN.decide(line)
    assert (verdict.action, verdict.rule) == ("ask", "kill-by-file"), (line, verdict)


def test_fuser_that_only_lists_is_allowed() -> None:
    assert PLAIN.decide("fuser -v -n tcp 8080").action == "allow"


@pytest.mark.parametrize("line", _lines("worktrees_removed_outside"))
def test_attack_a_linked_work_tree_outside_removed_with_git_is_refused(line: str) -> None:
    verdict = PLAIN.decide(line)
    assert (verdict.action, verdict.rule) == ("deny", "worktree-remove-outside"), (line, verdict)


def test_a_linked_work_tree_inside_the_project_is_removed_as_any_file_is() -> None:
    assert PLAIN.decide("git worktree remove trees/feature").action == "allow"


@pytest.mark.parametrize("line", _lines("deletions_in_a_home_under_tmp"))
def test_attack_a_home_under_tmp_is_not_taken_for_the_boxs_scratch(line: str) -> None:
    verdict = HOME_IN_TMP.decide(line)
    assert verdict.action == "deny", (line, verdict)


def test_beside_a_home_under_tmp_the_boxs_tmp_is_still_scratch() -> None:
    assert HOME_IN_TMP.decide("rm /tmp/build.log").action == "allow"


@pytest.mark.parametrize("line", _lines("rewritten_in_place_outside"))
def test_attack_a_file_outside_rewritten_in_place_by_a_formatter_or_converter_is_asked(line: str) -> None:
    # (red team 180's leads: clang-format -i, gofmt -w, prettier --write, black, ruff format, yq -i, objcopy, strip,
    # rename over files outside the project)
    verdict = PLAIN.decide(line)
    assert (verdict.action, verdict.rule) == ("ask", "write-outside"), (line, verdict)
    assert ON_A_COPY.decide(line).action == "allow", (line, ON_A_COPY.decide(line))


@pytest.mark.parametrize("line", _lines("in_place_in_the_project_or_checks_only"))
def test_a_formatter_in_the_project_or_one_that_only_checks_is_not_asked(line: str) -> None:
    verdict = PLAIN.decide(line)
    assert verdict.action == "allow", (line, verdict)
