"""Red team 64 F3: an apply killed at every fault point, then the next start, with the history on another file
system, over a file its owner may not read (0000), run without CAP_DAC_OVERRIDE. A rewrite of it killed after its
copy into the history was finished as a conflict (the copy's u+r moved its ctime: ``steps.kept_already`` now takes a
whole copy of it for the step's own). After the next start the tree is all-old or all-new and the undo exact (red
team 64's other shapes: test_rt64_read_only_elsewhere). Trees are read with ``support.as_a_user.snapshot_unopened``
(no chmod to look). Shapes are data (rt64_crash_shapes.json)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from support.as_a_user import again_as_a_user, as_a_user, snapshot_unopened
from support.crashwalk import crash_walk
from support.elsewhere import history_elsewhere

walk = crash_walk("crash_walk_rt64")
SHAPES = json.loads((Path(__file__).parent / "rt64_crash_shapes.json").read_text())
walk.SHAPES.clear()
walk.SHAPES.update(SHAPES)
vars(walk).update(snapshot=snapshot_unopened)  # (a module loaded afresh: its names are set so)
_base_populate = walk.populate


def populate(root: Path) -> None:
    _base_populate(root)
    (root / "rodir").mkdir()
    (root / "rodir" / "f").write_text("f\n")
    (root / "secret").write_text("s\n")
    for p in [root / "rodir" / "f", root / "rodir", root / "secret", root]:
        os.utime(p, ns=(walk.OLD_NS, walk.OLD_NS))
    (root / "secret").chmod(0o000)
    (root / "rodir").chmod(0o555)


vars(walk).update(populate=populate)
pytestmark = walk.pytestmark


def test_read_only_crash_walk_as_a_user(tmp_path: Path) -> None:
    again_as_a_user(__file__, tmp_path)


@as_a_user
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_attack_an_apply_killed_at_any_step_over_an_unreadable_file_is_finished_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    history_elsewhere(monkeypatch, tmp_path)
    walk.test_an_apply_killed_at_any_step_is_finished_whole_and_undoes_exactly(tmp_path, shape)
