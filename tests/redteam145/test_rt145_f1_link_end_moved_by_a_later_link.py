"""Red team 145 F1: a link's end judged once, then moved by another link the follower never sees together with it.

``link_ends.link_end`` (the answer to red teams 141 F1 / 143) follows a link the command made through every link on
the way — the real tree's, and those *the same command made in the same root*. A ``..`` after a link goes up from
where that link leads (as the kernel does). But two spellings leave the follower and the kernel apart:

* **two calls**: call 1 makes ``lib/a/b/`` (a real directory) and ``lib/mod.py -> a/b/../../../shared/mod.py``: it
  ends at ``<root>/shared/mod.py``, inside the root, landed unasked. Call 2 replaces the directory ``lib/a/b`` by a
  link ``lib/a/b -> .`` (it ends at ``<root>/lib/a``, inside the root: unasked). Nothing judges ``lib/mod.py`` again,
  yet the kernel now reads it as ``<root>/../shared/mod.py``: a module in a directory anyone may write (``/tmp``).
* **two roots, one call**: ``<B>/a -> .`` made in root B's change set, ``lib/mod.py -> <B>/a/../shared/mod.py`` in
  root A's. Following A's link, ``_after_link`` reads another root's names in the *real* tree only, where ``<B>/a``
  is not a link yet: the end is computed as ``<B>/shared/mod.py`` (inside a root). The kernel: ``<B>/..``.

Controls: the same two links made in one call in one root are asked (declined: nothing lands); a direct link to
``<B>/../shared/mod.py`` is asked. ``shared`` is a 1777 directory beside the roots (a stand-in for /tmp). The links
travel as data (rt145_f1_links.json); a person declines every question."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from support.boxed import Person
from support.link_steps import escaping, link_steps, shared

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

CASES: dict[str, dict[str, dict[str, object]]] = json.loads(
    (Path(__file__).resolve().parent / "rt145_f1_links.json").read_text()
)


def _shared(workspace: Path) -> Path:
    return shared(workspace)


def _escaping(root: Path, place: Path) -> list[str]:
    return escaping(root, [place])


async def _steps(workspace: Path, case: str, other: Path | None = None) -> tuple[Person, list[dict[str, object]]]:
    steps = [CASES[case][name] for name in ("first", "second") if name in CASES[case]]
    args = ("--allow-path", str(other)) if other is not None else ()
    return await link_steps(workspace, steps, {"{B}": str(other or workspace)}, *args)


async def test_control_both_links_in_one_call_are_asked(workspace: Path) -> None:
    shared = _shared(workspace)
    person, outs = await _steps(workspace, "one_call_control")
    assert person.questions, outs
    assert not _escaping(workspace, shared), outs


async def test_control_a_direct_link_past_the_other_root_is_asked(workspace: Path) -> None:
    shared = _shared(workspace)
    other = workspace.parent / "projb"
    other.mkdir()
    person, outs = await _steps(workspace, "two_roots_control", other)
    assert person.questions, outs
    assert not _escaping(workspace, shared), outs


async def test_attack_a_later_link_moves_an_earlier_links_end(workspace: Path) -> None:
    shared = _shared(workspace)
    person, outs = await _steps(workspace, "two_calls")
    escaping = _escaping(workspace, shared)
    assert not escaping or person.questions, ("a link now leads where others write; nobody asked", escaping,
                                              [o.get("transaction") for o in outs])  # fmt: skip


async def test_attack_a_link_through_another_roots_new_link(workspace: Path) -> None:
    shared = _shared(workspace)
    other = workspace.parent / "projb"
    other.mkdir()
    person, outs = await _steps(workspace, "two_roots", other)
    escaping = _escaping(workspace, shared)
    assert not escaping or person.questions, ("a link now leads where others write; nobody asked", escaping,
                                              [o.get("transaction") for o in outs])  # fmt: skip


def _actions(outs: list[dict[str, object]]) -> list[str]:
    found = []
    for out in outs:
        changes = out.get("changes")
        assert isinstance(changes, dict)
        found += [f"{p['path']} {p['action']}" for p in changes.get("paths", [])]
    return found


def _into_state(root: Path, home: Path) -> bool:
    link = root / "dist" / "probe.txt"
    state = home / ".local" / "state" / "mcp-guard"
    return link.is_symlink() and Path(os.path.realpath(link)).is_relative_to(state)


async def test_control_a_direct_link_into_the_state_directory_is_refused(workspace: Path, isolated_home: Path) -> None:
    _, outs = await _steps(workspace, "state_control")
    assert "dist/probe.txt refused" in _actions(outs), outs
    assert not _into_state(workspace, isolated_home), outs


async def test_attack_a_later_link_moves_an_earlier_link_into_the_state_directory(
    workspace: Path, isolated_home: Path
) -> None:
    person, outs = await _steps(workspace, "two_calls_state")
    landed = _into_state(workspace, isolated_home)
    if landed:  # the user's next build writes its output through the link
        (workspace / "src.txt").write_text("written by the build\n")
        shutil.copyfile(workspace / "src.txt", workspace / "dist" / "probe.txt")
    assert not landed or person.questions, ("a link now leads into the servers' state directory; nobody asked",
                                            os.path.realpath(workspace / "dist" / "probe.txt"),
                                            [o.get("transaction") for o in outs])  # fmt: skip
