"""Red team 5a: a directory with a default ACL (`shared/`: other::---) that itself, or any entry below it, carries a
project's own ``user.overlay.*`` attribute (data; the escape layer replicates that entry and the directories above
it) shows the command no default ACL: a new file there is made with the umask's mode (644: others read) and lands
so, where natively it inherits the default ACL (640 + ACL: others read nothing). Moving the directory (or a file in
it) loses its ACLs too."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from support.acls import acls, acls_work, project
from support.differential import differential

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


def marked_dir(root: Path) -> None:
    project(root)
    os.setxattr(root / "shared", "user.overlay.note", b"shared's own")


def marked_file_below(root: Path) -> None:
    project(root)
    os.setxattr(root / "shared" / "in" / "s.txt", "user.overlay.note", b"s's own")


@pytest.mark.parametrize("setup", [marked_dir, marked_file_below], ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    "command",
    ["echo x > shared/new.txt", "mkdir shared/sub && echo x > shared/sub/f", "mv shared shared2"],
    ids=["new-file", "new-dir", "move-dir"],
)
async def test_attack_default_acl_lost_under_escape_layer(
    workspace: Path, command: str, setup: Callable[[Path], None]
) -> None:
    if not acls_work(workspace / "probe"):
        pytest.skip("no POSIX ACLs here")
    problems, out = await differential(workspace, setup, command)
    assert not problems, "\n".join(problems)
    assert acls(workspace / "p") == acls(workspace.parent / "native"), out["changes"]
