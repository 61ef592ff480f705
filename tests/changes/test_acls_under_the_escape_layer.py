"""Red team 5a F3: a file with an ACL that also carries a project's own ``user.overlay.*`` attribute (data: shown
to the command by the escape layer's replica, which carried no ACL) lost its ACL when renamed (`mv acl.txt new.txt`,
or over another file): natively the ACL goes with the inode. Also: a project's own ``user.overlay.*`` attributes on
a file changed and then renamed over another: natively they go with the inode."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from support.acls import ACCESS, MAPPED_ACL, acls, acls_work, project
from support.differential import Case, differentials, failed

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


def only_source(root: Path) -> None:
    project(root)
    os.setxattr(root / "acl.txt", "user.overlay.note", b"acl's own")


def mapped_source(root: Path) -> None:
    project(root)
    os.setxattr(root / "acl.txt", ACCESS, MAPPED_ACL)  # naming our own user: one the box maps
    os.setxattr(root / "acl.txt", "user.overlay.note", b"acl's own")


def only_target(root: Path) -> None:
    project(root)
    os.setxattr(root / "plain" / "p.txt", "user.overlay.note", b"p's own")


def user_only(root: Path) -> None:
    project(root)
    os.setxattr(root / "acl.txt", "user.note", b"acl's user")


def marked(root: Path) -> None:
    project(root)
    os.setxattr(root / "plain" / "p.txt", "user.overlay.note", b"p's own")
    os.setxattr(root / "plain" / "p.txt", "user.note", b"p's user")
    os.setxattr(root / "acl.txt", "user.overlay.note", b"acl's own")
    os.setxattr(root / "other.txt", "user.note", b"other's user")


RENAMED_OVER = [
    "mv acl.txt new.txt",
    "mv acl.txt plain/p.txt",
    "echo more >> acl.txt && mv acl.txt new.txt",
    "echo more >> acl.txt && mv acl.txt plain/p.txt",
    "mv acl.txt t && mv plain/p.txt acl.txt && mv t plain/p.txt",
]


def same_acls(case: Case) -> list[str]:
    if acls(case.box) == acls(case.native):
        return case.found
    return [*case.found, f"ACLs {acls(case.box)} != natively {acls(case.native)}: {case.out['changes']}"]


@pytest.mark.parametrize("setup", [marked, only_source, mapped_source], ids=lambda f: f.__name__)
async def test_attack_overlay_attrs_renamed_over(workspace: Path, setup: Callable[[Path], None]) -> None:
    """Every command through one server (each in copies of its own): each failing one is named."""
    if not acls_work(workspace / "probe"):
        pytest.skip("no POSIX ACLs here")
    cases = await differentials(workspace, setup, RENAMED_OVER)
    assert not (problems := failed(cases, same_acls)), problems
