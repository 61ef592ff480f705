"""Issue 42 (1): "ACLs a command sets never land" - but a project's OWN access control lists are the project's
(changes/xattrs.py own_overlay: kept on what replaces it; docs/shell_exec.md "What lands is what the command did":
the tree the same commands leave natively). A directory team/ with a default ACL of its own (user 54321 gets rwx
on everything made there): ``echo x > team/new.txt`` natively gives new.txt the inherited ACL. Observed: the file
lands WITHOUT it (user 54321 loses the access the project grants every new file there) and the result reports a
refusal "its system.posix_acl_access left out: access control lists a command sets are not applied" for an ACL the
command never set: every new file in such a directory is a refusal. Expected: no refusal, the inherited ACL."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.acls import ACCESS, ANY, DEFAULT, acl
from support.boxed import run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


# user::rw- user:54321:r-- group::r-- mask::r-- other::---
FILE_ACL = acl((0x01, 6, ANY), (0x02, 4, 54321), (0x04, 4, ANY), (0x10, 4, ANY), (0x20, 0, ANY))
# user::rwx user:54321:rwx group::r-x mask::rwx other::---
DIR_ACL = acl((0x01, 7, ANY), (0x02, 7, 54321), (0x04, 5, ANY), (0x10, 7, ANY), (0x20, 0, ANY))


def _acls_work(path: Path) -> bool:
    try:
        os.setxattr(path, ACCESS, FILE_ACL)
    except OSError:
        return False
    return True


async def test_false_refusal_inherited_default_acl_called_the_commands(workspace: Path) -> None:
    d = workspace / "team"
    d.mkdir()
    if not _acls_work(workspace / "hello.txt"):
        pytest.skip("no POSIX ACLs here")
    os.setxattr(d, DEFAULT, DIR_ACL)
    os.setxattr(d, ACCESS, DIR_ACL)
    native = d / "native.txt"
    native.write_text("n\n")  # what the kernel gives a new file there
    expected = os.getxattr(native, ACCESS)
    async with shell(workspace) as client:
        out = await run(client, "echo x > team/new.txt")
    assert out["transaction"] == "applied", out
    assert not out["changes"]["refused"], out["changes"]["paths"]
    assert os.getxattr(d / "new.txt", ACCESS) == expected
