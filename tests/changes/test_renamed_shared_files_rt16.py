"""Red teams 16 and 17, on the box's rename helper saying where a renamed shared file came from (07684f6): the
file renamed and then changed lands under all its names as natively (chains, a link between renames, times only,
over another file, renamed away and back, a mode set through another name), a copy that kept the file's time is
never taken for a name of the file rewritten through another (16 F1: a backup lost its bytes; 17 F2: copytruncate),
and a new file at the name a file was renamed away from is not that file (16 F2: log rotation; 17 F1 in part: a
copy made there) unless made a name of it again (17 F3). Each is compared with the same command run natively, then
undone and redone."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.differential import OLD_NS, Case, differential, differentials, failed, three_names, undo_redo
from support.fidelity import snapshot

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]
setup = three_names  # h1, h2 and d/h3 one file; o.txt; all of an old time


SEVERAL_NAMES = [
    "mv h1 n && ln n x && mv n m && echo z >> m",  # a link made between two renames (the chain was lost)
    "mv h1 n && touch -d @5 n",  # its time alone changed
    "mv h1 o.txt && echo z >> o.txt",  # renamed over another file
    "mv h1 n && echo z > n && mv n h1",  # renamed away and back
    "mv h1 n && echo z >> n && mv h2 h1",
    "mv h1 n && echo z >> n && chmod 600 h2",  # a mode set through a name it kept
    "mv h1 n && cp -p n h1 && echo z >> n",  # a copy at the name it left keeps the old bytes
    "mkdir e && mv h1 e/n && echo z >> e/n",  # into a directory the command made
    # F1: a copy that kept the file's time, then the name it was copied from removed, then an edit
    "cp -p h1 h1.bak && rm h1 && echo edited > h2",
    "cp -a h1 bak && rm h1 && echo z >> h2",
    "mkdir e && cp -p h1 e/bak && rm h1 && echo edited > h2",
    # red team 17 F1: a new file with the file's bytes made at the name the file was renamed away from
    "sed -i.orig s/important/x/ h1 && echo z >> h2",
    # red team 17 F2: a copy that kept the file's time, then the file rewritten in place (copytruncate)
    "cp -p h1 h1.1 && truncate -s 0 h1",
    "cp -p h1 h1.bak && echo edited >> h1",
    "cp -a h1 d/bak && echo edited > h1",
    "install -p -m 644 h1 inst && echo edited > h2",
    # red team 17 F3: a name the file left made a name of it again
    "mv h1 n && echo z >> n && ln h2 h1",
    "mv h1 n && ln h2 h1 && echo z >> n",
    "cp -p h1 bak && mv h1 n && echo z >> n",
]


def _several_names(case: Case) -> list[str]:
    problems = [] if case.out["changes"]["conflicts"] == 0 else [f"conflicts: {case.out['changes']}"]
    problems += case.found
    for backup in ("h1.bak", "bak", "e/bak"):
        if (case.box / backup).exists() and (case.box / backup).read_text() != "important original\n":
            problems.append(f"{backup} holds {(case.box / backup).read_text()!r}, not the original bytes")
    return problems


async def test_a_renamed_or_copied_file_with_several_names_lands_as_natively(workspace: Path) -> None:
    """Every command through one server (each in copies of its own): each failing one is named."""
    cases = await differentials(workspace, setup, SEVERAL_NAMES)
    assert not (problems := failed(cases, _several_names)), problems


def rotated(root: Path) -> None:
    (root / "logs").mkdir()
    (root / "app.log").write_text("line 1\n")
    os.link(root / "app.log", root / "logs" / "current")
    for p in [root / "app.log", root / "logs", root]:
        os.utime(p, ns=(OLD_NS, OLD_NS))


ROTATIONS = [
    "mv app.log app.log.1 && echo 'line 2' >> app.log.1 && echo fresh > app.log",
    "mv app.log app.log.1 && echo fresh > app.log",
]


def _rotated(case: Case) -> list[str]:
    current = (case.box / "logs" / "current").read_text()
    problems = [] if current.startswith("line 1") else [f"logs/current holds {current!r}: {case.out['changes']}"]
    return problems + case.found


async def test_a_new_file_at_the_name_a_log_was_rotated_from_is_not_the_log(workspace: Path) -> None:
    cases = await differentials(workspace, rotated, ROTATIONS)
    assert not (problems := failed(cases, _rotated)), problems


async def test_a_name_made_by_ln_keeps_the_old_bytes_where_the_file_is_rewritten_through_another(
    workspace: Path,
) -> None:
    """The documented limit (docs/shell_exec.md, hard links): `ln` is no rename the box sees, and such a name looks
    the same on the copy as a copy that kept the file's time — taken for one, it keeps the old bytes (natively it
    is a name of the rewritten file). Nothing conflicts, nothing is lost, undo is exact."""
    found, out = await differential(workspace, setup, "echo a >> h1 && ln h2 d/h4 && rm h2")
    box = workspace / "p"
    assert out["changes"]["conflicts"] == 0, str(out["changes"])
    assert (box / "h1").read_text() == (box / "d" / "h3").read_text() == "important original\na\n"
    assert (box / "d" / "h4").read_text() == "important original\n"
    assert [f for f in found if not f.startswith(("d/h4:", "hard links", "native output"))] == [], found
    fresh = workspace.parent / "fresh"
    fresh.mkdir()
    setup(fresh)
    assert undo_redo(str(out["auditId"]), box, snapshot(fresh), snapshot(box)) == []
