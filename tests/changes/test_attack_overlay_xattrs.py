"""Attack: a command sets ``user.overlay.*`` attributes (overlayfs's own names; stored escaped on its copy) on
project files, so that every later copy reads them as bookkeeping: an empty file marked ``whiteout`` in a directory
marked ``opaque=x`` vanishes from later commands' view, a file marked ``metacopy``/``redirect`` cannot be read.
They never land (``changes.xattrs``): each test fails if the attack works."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


def bookkeeping(path: Path) -> list[str]:
    return [
        n
        for n in os.listxattr(path, follow_symlinks=False)
        if n.startswith("user.overlay.") and not n.startswith("user.overlay.overlay.")
    ]


def plant(root: Path) -> str:
    (root / "d").mkdir()
    (root / "d" / "victim").write_text("")
    (root / "d" / "keep").write_text("keep")
    (root / "important.txt").write_text("the user's work\n")
    return program(
        root,
        "plant",
        """
os.setxattr("d", "user.overlay.opaque", b"x")
os.setxattr("d/victim", "user.overlay.whiteout", b"y")
os.setxattr("important.txt", "user.overlay.metacopy", b"")
os.setxattr("important.txt", "user.overlay.redirect", b"/nowhere")
""",
    )


async def test_overlay_bookkeeping_attributes_never_land_in_the_project(workspace: Path) -> None:
    code = plant(workspace)
    person = Person()
    async with shell(workspace, person) as client:
        out = await run(client, code)
        landed = {p: bookkeeping(workspace / p) for p in ("d", "d/victim", "important.txt")}
        later = await run(client, "touch probe; cat important.txt; ls d")
    assert not any(landed.values()), (
        f"overlay bookkeeping landed in the real tree: {landed}; transaction {out['transaction']}, "
        f"questions {person.questions}; a later command now sees: stdout={later['stdout']!r} "
        f"stderr={later['stderr']!r}"
    )


async def test_later_commands_still_see_and_read_the_project(workspace: Path) -> None:
    code = plant(workspace)
    async with shell(workspace) as client:
        await run(client, code)
        later = await run(client, "touch probe; cat important.txt; ls d")
    assert later["stdout"].startswith("the user's work\n") and "victim" in later["stdout"], later
