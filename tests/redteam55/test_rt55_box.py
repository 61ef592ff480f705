"""Red team 55 (fresh brief on ea64391) through the real server: files with several names followed by the call's
init. Data: rt55.json (commands and programs only as data). Each test_attack_* failed before its fix.

* F1: ``unlinks.remade`` stopped at 10,000 names said (``renames.renamed`` at 10,000 files renamed) without saying
  that names went unfollowed: a name removed and made again after 10,000 files moved into a watched directory was
  judged by its bytes, as the real file rewritten in place, and its untouched names got the new bytes.
* F2: the search for directories to watch left out every directory named ``.mcp-guard`` and every ``*/.git/objects``
  at any depth, not only each root's own.
* F3: ``rename(h2, h1)`` of two names of one file through another process's ``/proc/<pid>/cwd`` was left to the
  kernel (the helper's lookup never follows a magic link), which on the copy moved one inode over the other: a name
  of the project went. Now such a rename fails with ELOOP (documented).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from support.boxed import run, shell
from support.differential import OLD_NS, Case, differentials, failed, two_groups

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]
DATA = json.loads((Path(__file__).parent / "rt55.json").read_text())
PROGRAMS = tuple(k[: -len("_program")] for k in DATA if k.endswith("_program"))


def _project(root: Path) -> None:
    two_groups(root, {name: DATA[f"{name}_program"] for name in PROGRAMS})


def _own_area_project(root: Path) -> None:
    """_project, v/.mcp-guard/k1 + k2 (one file) and w/.git/objects/k1 + k2 (one file): directories named as the
    server's own area and git's object store, below the root."""
    _project(root)
    for where in (root / "v" / ".mcp-guard", root / "w" / ".git" / "objects"):
        where.mkdir(parents=True)
        (where / "k1").write_text("kept\n")
        os.link(where / "k1", where / "k2")
    for p in [root / "v" / ".mcp-guard" / "k1", root / "v" / ".mcp-guard", root / "v",
              root / "w" / ".git" / "objects" / "k1", root / "w" / ".git" / "objects", root / "w" / ".git",
              root / "w", root]:  # fmt: skip
        os.utime(p, ns=(OLD_NS, OLD_NS))


def _untouched(case: Case) -> list[str]:
    """The names of the project's files with several names hold what they hold natively."""
    return [f"{n}: {(case.box / n).read_bytes()!r} != {(case.native / n).read_bytes()!r}"
            for n in ("h1", "h2", "d/h3", "g1", "g2")
            if (case.native / n).exists() and (case.box / n).exists()
            and (case.box / n).read_bytes() != (case.native / n).read_bytes()]  # fmt: skip


async def test_attack_past_ten_thousand_names_said_a_name_made_again_never_lands_under_its_other_names(
    workspace: Path,
) -> None:
    cases = await differentials(workspace, _project, {**DATA["control_cases"], **DATA["said_max_cases"]},
                                undo_too=False)  # fmt: skip
    assert not (problems := failed(cases, _untouched)), problems


async def test_attack_a_nested_directory_named_as_the_own_area_or_git_objects_is_watched(workspace: Path) -> None:
    cases = await differentials(workspace, _own_area_project, {**DATA["control_cases"], **DATA["own_area_cases"]})
    assert not (problems := failed(cases, lambda case: case.found)), problems


async def test_attack_a_rename_through_another_process_cwd_never_takes_a_name_of_a_file_with_several(
    workspace: Path,
) -> None:
    """Renames and links through /proc/<parent>/cwd, and the stale link notes the red team tried: as natively
    (the rename onto the file's own other name is a no-op natively; in the box it fails, changing nothing)."""
    commands = {**DATA["stale_link_note_cases"], **DATA["proc_other_cases"]}
    cases = await differentials(workspace, _project, commands)
    assert not (problems := failed(cases, lambda case: case.found)), problems


async def test_a_rename_through_another_process_cwd_fails_with_eloop_and_changes_nothing(workspace: Path) -> None:
    root = workspace / "p"
    root.mkdir()
    _project(root)
    async with shell(workspace) as client:
        out = await run(client, DATA["proc_rename_refused"], cwd=str(root))
    assert "rename: Too many levels of symbolic links" in (out.get("stdout") or ""), out
    assert (root / "h2").exists() and not (root / "n").exists()
    assert os.stat(root / "h2").st_ino == os.stat(root / "h1").st_ino
