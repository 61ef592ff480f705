"""Red team 64 F2, F3: an apply and an undo killed at every fault point, then the next start, over entries their
owner may not write or read (0555 trees, a 0444 file, a 0000 file), run without CAP_DAC_OVERRIDE, with the history on
the same or another file system. Every widening of owner bits is a fault point (``files.widened``): killed between
it and the chmod that puts the mode back, the mode was left widened in the project, the copy or the history (F2);
the next start now puts it back. A rewrite of a 0000 file killed after its copy into the history was finished as a
conflict (F3: ``steps.kept_already`` takes a whole copy of it for the step's own). After the next start the tree is
all-old or all-new, modes included, and the undo exact. Trees are read with ``support.as_a_user.snapshot_unopened``
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
    (root / "rodir" / "sub").mkdir(parents=True)
    (root / "rodir" / "f").write_text("f\n")
    (root / "rodir" / "sub" / "g").write_text("g\n")
    (root / "ro.txt").write_text("r\n")
    (root / "secret").write_text("s\n")
    for p in [root / "rodir" / "sub" / "g", root / "rodir" / "f", root / "rodir" / "sub", root / "rodir",
              root / "ro.txt", root / "secret", root]:  # fmt: skip
        os.utime(p, ns=(walk.OLD_NS, walk.OLD_NS))
    (root / "ro.txt").chmod(0o444)
    (root / "secret").chmod(0o000)
    (root / "rodir" / "sub").chmod(0o555)
    (root / "rodir").chmod(0o555)


vars(walk).update(populate=populate)
pytestmark = walk.pytestmark


# Each place that widens owner bits, walked in the suite (all 11 shapes, apply and undo, both set-ups: 44 walks,
# about four minutes — ``RT64_EVERY_WALK=1`` runs them).
APPLIES = [("rewrite-unreadable-file", True), ("ro-tree-moved-to-other-dir", False), ("attr-on-ro-file", False),
           ("make-ro", False), ("write-into-ro-dir", True)]  # fmt: skip
UNDOS = [("ro-tree-removed", True), ("ro-file-moved-into-ro-dir", False)]
if os.environ.get("RT64_EVERY_WALK"):
    APPLIES = UNDOS = [(shape, elsewhere) for shape in sorted(SHAPES) for elsewhere in (False, True)]


# (each walk again as a user in a pytest of its own, so that the walks spread over the suite's workers)
@pytest.mark.parametrize("walked", [f"apply_killed and {shape}-{elsewhere}" for shape, elsewhere in APPLIES]
                         + [f"undo_killed and {shape}-{elsewhere}" for shape, elsewhere in UNDOS])  # fmt: skip
def test_read_only_crash_walk_as_a_user(tmp_path: Path, walked: str) -> None:
    again_as_a_user(__file__, tmp_path, only=walked)


@as_a_user
@pytest.mark.parametrize(("shape", "elsewhere"), APPLIES)
def test_attack_an_apply_killed_at_any_step_over_read_only_entries_is_finished_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str, elsewhere: bool
) -> None:
    if elsewhere:
        history_elsewhere(monkeypatch, tmp_path)
    walk.test_an_apply_killed_at_any_step_is_finished_whole_and_undoes_exactly(tmp_path, shape)


@as_a_user
@pytest.mark.parametrize(("shape", "elsewhere"), UNDOS)
def test_attack_an_undo_killed_at_any_step_over_read_only_entries_is_finished_or_gone_back_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str, elsewhere: bool
) -> None:
    if elsewhere:
        history_elsewhere(monkeypatch, tmp_path)
    walk.test_an_undo_killed_at_any_step_is_finished_or_gone_back_whole(tmp_path, shape)
