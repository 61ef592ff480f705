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
from support.differential import Case, differentials, failed

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


def marked_dir(root: Path) -> None:
    project(root)
    os.setxattr(root / "shared", "user.overlay.note", b"shared's own")


def marked_file_below(root: Path) -> None:
    project(root)
    os.setxattr(root / "shared" / "in" / "s.txt", "user.overlay.note", b"s's own")


UNDER_A_DEFAULT_ACL = {
    "new-file": "echo x > shared/new.txt",
    "new-dir": "mkdir shared/sub && echo x > shared/sub/f",
    "move-dir": "mv shared shared2",
}


def same_acls(case: Case) -> list[str]:
    if acls(case.box) == acls(case.native):
        return case.found
    return [*case.found, f"ACLs {acls(case.box)} != natively {acls(case.native)}: {case.out['changes']}"]


@pytest.mark.parametrize("setup", [marked_dir, marked_file_below], ids=lambda f: f.__name__)
async def test_attack_default_acl_lost_under_escape_layer(workspace: Path, setup: Callable[[Path], None]) -> None:
    """Every command through one server (each in copies of its own): each failing one is named."""
    if not acls_work(workspace / "probe"):
        pytest.skip("no POSIX ACLs here")
    cases = await differentials(workspace, setup, UNDER_A_DEFAULT_ACL)
    assert not (problems := failed(cases, same_acls)), problems
