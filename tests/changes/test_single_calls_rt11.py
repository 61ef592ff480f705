"""Red team 11: single everyday calls over files with several names (and a sparse one), compared with the same
command run natively, then undone and redone: ``held``'s new ctime check (8df9f9c) must take none of the call's
own steps for someone else's change (no conflict, the tree as natively)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.differential import OLD_NS, Case, differential, differentials, failed, undo_redo
from support.fidelity import snapshot

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


def setup(root: Path) -> None:
    (root / "d").mkdir()
    (root / "h1").write_text("h\n")
    os.link(root / "h1", root / "h2")
    os.link(root / "h1", root / "d" / "h3")
    (root / "o.txt").write_text("o\n")
    with open(root / "sparse.img", "wb") as f:
        f.truncate(4 << 20)
        f.seek(1 << 20)
        f.write(b"data")
    os.link(root / "sparse.img", root / "d" / "img2")
    for p in [root / "h1", root / "o.txt", root / "sparse.img", root / "d", root]:
        os.utime(p, ns=(OLD_NS, OLD_NS))


COMMANDS = [
    "chmod 600 h1 && echo y >> h2",
    "ln -f o.txt h2 && echo w >> h1",
    "printf X | dd of=d/img2 bs=1 seek=3000000 conv=notrunc status=none && rm sparse.img",
    "rm -r d && echo q >> h1",  # red team 11 F5: its own rewrite of d/h3 made its rm -r d a conflict
    "mv h1 n && echo z >> n",  # red team 11 F6: the rewrite of a renamed file landed under its new name only
    "mv h2 d/n && echo z >> h1 && mv d/h3 m",
    "mv h1 n && mv n d/m && echo z >> d/m && ln d/m q",  # a chain of renames, then a write and a new name
    "mv h1 n && chmod 600 n",
    "mv h1 n && rm n && echo x > n",  # a new file at the name it was renamed to: none of h1's
    'python3 -c \'import os; os.rename("d/h3", "n")\' && printf z >> n',
    "mv -T h2 d/x && echo y > d/x && mv h1 h2",
]


def _problems(case: Case) -> list[str]:
    conflicts = [] if case.out["changes"]["conflicts"] == 0 else [f"conflicts: {case.out['changes']}"]
    return conflicts + case.found


async def test_one_call_over_files_with_several_names(workspace: Path) -> None:
    """Every command through one server (each in copies of its own): each failing one is named."""
    cases = await differentials(workspace, setup, COMMANDS)
    assert not (problems := failed(cases, _problems)), problems


async def test_a_shared_file_changed_then_renamed_beside_its_names_lands_as_that_file(workspace: Path) -> None:
    """Overlayfs copied h1 up as a file of its own at the write; the call's init follows the names of the
    directories that hold such files (``shell.sandbox.unlinks``), so ``n`` holds h1's file: natively one file."""
    found, out = await differential(workspace, setup, "echo z >> h1 && mv h1 n")
    assert out["changes"]["conflicts"] == 0, str(out["changes"])
    assert found == [], found
    box = workspace / "p"
    assert (box / "n").stat().st_ino == (box / "h2").stat().st_ino == (box / "d" / "h3").stat().st_ino


async def test_a_shared_file_changed_then_renamed_into_a_new_directory_lands_as_a_new_file(workspace: Path) -> None:
    """The documented limit (docs/shell_exec.md, hard links): a directory the command made is not watched, so the
    rename of the copy-up there moves a file of its own; nothing is lost, nothing conflicts, undo is exact."""
    found, out = await differential(workspace, setup, "echo z >> h1 && mkdir e && mv h1 e/n")
    assert out["changes"]["conflicts"] == 0, str(out["changes"])
    box = workspace / "p"
    assert (box / "e" / "n").read_text() == "h\nz\n" and (box / "h2").read_text() == "h\n"
    assert (box / "h2").stat().st_ino == (box / "d" / "h3").stat().st_ino != (box / "e" / "n").stat().st_ino
    assert [f for f in found if not f.startswith(("h2:", "d/h3:", "hard links", "native output"))] == [], found
    fresh = workspace.parent / "fresh"
    fresh.mkdir()
    setup(fresh)
    assert undo_redo(str(out["auditId"]), box, snapshot(fresh), snapshot(box)) == []
