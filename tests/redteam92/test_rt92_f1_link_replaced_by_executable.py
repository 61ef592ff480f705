"""Red team 92 F1 (issue 42, claim 1: a mode change is judged by what it grants): a symlink replaced by an
executable file is never asked as a new executable.

``effects._tally`` asks "new executables" for a file whose mode has an x bit its old mode had not. A symlink's
``old_mode`` is 0777 (a link has no mode of its own — red team 81 F3 made that no grant in the summary), so
``run -> settings.txt`` (a link to plain data) replaced by a 0755 script is "not made executable": applied unasked.
The same when the link was moved away first and a new executable made at its name in a re-made directory
(``effects._tally``'s move branch looks the source up only among deleted *files*, and the plain branch is skipped
because the path is a move's end in ``moves``).

Safe behaviour: asked as a new executable, as ``printf ... > run && chmod 755 run`` is where no link stood."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import Judgement, judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.boxed import Person, run, shell
from support.copies import Copy, overlays_work

POLICY = load_policy()


def _judged(tmp_path: Path, setup: Callable[[Path], None], script: str) -> Judgement:
    copy = Copy(tmp_path)
    setup(copy.root)
    changes = copy.run(script)
    return judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)])


def _link_at_top(root: Path) -> None:
    (root / "settings.txt").write_text("plain data\n")
    (root / "run").symlink_to("settings.txt")


def _link_in_dir(root: Path) -> None:
    (root / "d").mkdir()
    (root / "settings.txt").write_text("plain data\n")
    (root / "d" / "run").symlink_to("../settings.txt")
    (root / "e").mkdir()


def _no_link(root: Path) -> None:
    (root / "settings.txt").write_text("plain data\n")


@pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
def test_control_a_new_executable_is_asked(tmp_path: Path) -> None:
    judged = _judged(tmp_path, _no_link, "printf 'echo hi\\n' > run && chmod 755 run")
    assert any("new executables" in a for a in judged.asks), judged.asks


@pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
def test_a_link_replaced_by_an_executable_is_asked(tmp_path: Path) -> None:
    judged = _judged(tmp_path, _link_at_top, "rm run && printf 'echo hi\\n' > run && chmod 755 run")
    assert any("new executables" in a and "run" in a for a in judged.asks), (judged.asks, judged.summary)


@pytest.mark.anyio
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
async def test_the_server_asks_before_a_link_becomes_an_executable(workspace: Path) -> None:
    _link_at_top(workspace)
    person = Person()
    async with shell(workspace, person) as client:
        out = await run(client, "rm run && printf 'echo hi\\n' > run && chmod 755 run", cwd=str(workspace))
    assert (workspace / "run").is_file() and not (workspace / "run").is_symlink(), out  # it ran (the person said yes)
    assert person.questions, f"a new executable applied unasked: {out.get('changes')}"


@pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
def test_a_link_moved_away_and_an_executable_made_at_its_name_is_asked(tmp_path: Path) -> None:
    script = "mv d/run e/run && rm -rf d && mkdir d && printf 'echo hi\\n' > d/run && chmod 755 d/run"
    judged = _judged(tmp_path, _link_in_dir, script)
    assert any("new executables" in a and "d/run" in a for a in judged.asks), (judged.asks, judged.summary)
