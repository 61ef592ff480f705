"""Fidelity: a project's own ``user.overlay.*`` attributes are data and survive an apply (docs/shell_exec.md,
"A project's own user.overlay.* attributes are data"); renames land as renames. ``mv``/``cp -a`` of such an entry
keeps its attributes natively (rename keeps the inode; ``cp -a`` copies user.* attributes), and through shell_exec
too: an attribute the project has (same name, same value) that a rename or a copy carried lands. (They were once
left out as if the command had set them.)"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import anyio
import pytest

from support.boxed import run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


def _xattrs(path: Path) -> dict[str, bytes]:
    return {n: os.getxattr(path, n, follow_symlinks=False) for n in os.listxattr(path, follow_symlinks=False)}


async def _ready(client: object) -> None:
    """Until the server's walk has found the marked entries (the copy then shows them as the host has them)."""
    with anyio.move_on_after(30):
        while "user.overlay.mine" not in (await run(client, "getfattr -d -m - ov.txt 2>&1; touch .ran"))["stdout"]:
            await anyio.sleep(0.05)


@pytest.mark.parametrize(
    ("command", "source", "target"),
    [
        ("mv ov.txt moved.txt", "ov.txt", "moved.txt"),
        ("mv plain plain2", "plain", "plain2"),
        ("cp -a ov.txt copy.txt", "ov.txt", "copy.txt"),
    ],
)
async def test_rename_keeps_a_projects_own_overlay_attributes(
    workspace: Path, command: str, source: str, target: str
) -> None:
    (workspace / "ov.txt").write_text("ov\n")
    os.setxattr(workspace / "ov.txt", "user.overlay.mine", b"m")
    (workspace / "plain").mkdir()
    (workspace / "plain" / "in.txt").write_text("in\n")
    os.setxattr(workspace / "plain", "user.overlay.mine", b"d")
    expected = _xattrs(workspace / source)
    async with shell(workspace) as client:
        await _ready(client)
        out = await run(client, command)
    assert out["transaction"] == "applied", out
    assert _xattrs(workspace / target) == expected, (
        f"{command!r}: {target} has {_xattrs(workspace / target)}, natively {expected}; {out['changes']['paths']}"
    )
