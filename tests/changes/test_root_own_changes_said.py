"""What a command does to the root directory's own ACLs or ``user.overlay.*`` attributes is not applied (the copy's
upper root stands for the root, and overlayfs reads ``user.overlay.*`` there as its own) — and the result says so,
as it does for every entry below the root (red team 72: ``setfattr -x system.posix_acl_access .`` and
``setfattr -n user.overlay.opaque -v y .`` were lost with nothing said, a false success)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.acls import ACCESS, DEFAULT, acl, acls_work
from support.boxed import program, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

ANY = 0xFFFFFFFF
# user::rwx user:<ours>:r-x group::r-x mask::r-x other::---
TEAM = acl((0x01, 7, ANY), (0x02, 5, os.getuid()), (0x04, 5, ANY), (0x10, 5, ANY), (0x20, 0, ANY))


def refused(out: dict[str, object]) -> dict[str, str]:
    changes = out["changes"]
    assert isinstance(changes, dict)
    return {p["path"]: p["reason"] for p in changes["paths"] if p["action"] == "refused"}


@pytest.mark.parametrize("name", [ACCESS, DEFAULT])
async def test_a_commands_removal_of_the_roots_own_acl_is_said_not_applied(workspace: Path, name: str) -> None:
    if not acls_work(workspace / "probe"):
        pytest.skip("no POSIX ACLs here")
    os.setxattr(workspace, name, TEAM)
    check = program(workspace, "unacl", f"os.removexattr('.', {name!r}); open('n.txt', 'w').write('n')\nprint('ok')\n")
    async with shell(workspace) as client:
        out = await run(client, check)
    assert out["stdout"] == "ok\n", out
    assert os.getxattr(workspace, name) == TEAM  # not applied ...
    why = refused(out)
    assert any("posix_acl" in reason for reason in why.values()), out["changes"]  # ... and said
    assert (workspace / "n.txt").read_text() == "n"  # the rest lands


async def test_a_chmod_of_a_root_with_an_acl_lands_and_says_nothing_of_the_acl(workspace: Path) -> None:
    if not acls_work(workspace / "probe"):
        pytest.skip("no POSIX ACLs here")
    os.setxattr(workspace, ACCESS, TEAM)
    async with shell(workspace) as client:
        out = await run(client, "chmod 0700 .")
    assert os.stat(workspace).st_mode & 0o7777 == 0o700
    assert not refused(out), out["changes"]  # chmod rewrites the ACL's mask: the mode's, not an ACL the command set


async def test_a_commands_user_overlay_attribute_on_the_root_is_said_not_applied(workspace: Path) -> None:
    check = program(workspace, "mark", "os.setxattr('.', 'user.overlay.mine', b'v'); print('ok')\n")
    async with shell(workspace) as client:
        out = await run(client, check)
    assert out["stdout"] == "ok\n", out
    assert not [n for n in os.listxattr(workspace) if n.startswith("user.overlay.")]
    assert any("user.overlay.mine left out" in reason for reason in refused(out).values()), str(out)
