"""Red team 147 F1: a directory link made in a later call moves where an earlier call's link ends; no ``..`` needed.

``link_ends.link_end`` judges a link the command made by where it ends, following every link on the way as the tree
the command leaves has it. Red team 145 F1's answer (``climbs_back``) asks about a target that turns back out of a
directory it names (``a/b/../../x``), since a later link over ``a/b`` moves its end. The same holds for a target
with no turn at all:

* call 1 makes ``lib/mod.py -> ../up/<shared>/mod.py`` where ``up`` is missing (or an empty real directory): the
  end ``<root>/up/<shared>/mod.py`` lies inside the root and nothing guards it: landed unasked;
* call 2 makes ``up -> /`` (a root-owned directory; a real empty ``up`` removed first): landed unasked, its end is
  the system's, and nothing looks at the links already in the tree that pass through the new name.

The kernel now reads ``lib/mod.py`` as ``<shared>/mod.py`` (a directory anyone may write: a stand-in for /tmp), and
``dist/probe.txt`` as a file in the servers' state directory (the user's next build writes it).

Controls: both links in one call are asked (declined: nothing lands) / refused. The links travel as data
(rt147_f1_links.json); a person declines every question."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support.boxed import Person
from support.link_steps import escaping, link_steps, shared

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

CASES: dict[str, dict[str, dict[str, object]]] = json.loads(
    (Path(__file__).resolve().parent / "rt147_f1_links.json").read_text()
)


def _shared(workspace: Path) -> Path:
    return shared(workspace)


def _state(home: Path) -> Path:
    return home / ".local" / "state" / "mcp-guard"


def _escaping(root: Path, places: list[Path]) -> list[str]:
    return escaping(root, places)


async def _steps(workspace: Path, home: Path, case: str) -> tuple[Person, list[dict[str, object]]]:
    steps = [CASES[case][name] for name in ("first", "second") if name in CASES[case]]
    fill = {"{SHARED}": str(_shared(workspace)).lstrip("/"), "{STATE}": str(_state(home)).lstrip("/")}
    return await link_steps(workspace, steps, fill)


async def test_control_both_links_in_one_call_are_asked(workspace: Path, isolated_home: Path) -> None:
    shared = _shared(workspace)
    person, outs = await _steps(workspace, isolated_home, "one_call_control")
    assert person.questions, outs
    assert not _escaping(workspace, [shared]), outs


async def test_control_both_links_into_the_state_directory_in_one_call(workspace: Path, isolated_home: Path) -> None:
    _, outs = await _steps(workspace, isolated_home, "state_one_call_control")
    assert not _escaping(workspace, [_state(isolated_home)]), outs


@pytest.mark.parametrize("case", ["later_dir_link_to_slash", "later_dir_link_to_slash_real_dir"])
async def test_attack_a_later_directory_link_moves_an_earlier_links_end(
    workspace: Path, isolated_home: Path, case: str
) -> None:
    shared = _shared(workspace)
    person, outs = await _steps(workspace, isolated_home, case)
    escaping = _escaping(workspace, [shared])
    assert not escaping or person.questions, ("a link now leads where others write; nobody asked", escaping,
                                              [o.get("transaction") for o in outs])  # fmt: skip


async def test_attack_a_later_directory_link_moves_an_earlier_link_into_the_state_directory(
    workspace: Path, isolated_home: Path
) -> None:
    person, outs = await _steps(workspace, isolated_home, "later_dir_link_state")
    escaping = _escaping(workspace, [_state(isolated_home)])
    assert not escaping or person.questions, ("a link now leads into the servers' state directory; nobody asked",
                                              escaping, [o.get("transaction") for o in outs])  # fmt: skip
