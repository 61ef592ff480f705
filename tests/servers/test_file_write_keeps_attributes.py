"""A file file_write rewrites keeps its access control list and its ``user.*`` attributes, as a file rewritten in
place does (red team 4 F3: the new content lands as a new inode, which had neither; with the ACL gone, a mask wider
than the group entry — ``group::--- mask::rw-``, shown as mode 0660 — gave the group read and write)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from support import serve
from support.acls import ACCESS, ANY, DEFAULT, acl

pytestmark = pytest.mark.anyio


# user::rw- user:54321:rw- group::--- mask::rw- other::---
SHARED = acl((0x01, 6, ANY), (0x02, 6, 54321), (0x04, 0, ANY), (0x10, 6, ANY), (0x20, 0, ANY))
# a directory default that new entries inherit: others may read
OPEN_DEFAULT = acl((0x01, 7, ANY), (0x04, 5, ANY), (0x20, 5, ANY))


async def test_a_rewritten_file_keeps_its_acl_and_attributes_and_takes_no_default(
    workspace: Path, tmp_path: Path
) -> None:
    secret = workspace / "docs" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("old secret\n")
    try:
        os.setxattr(secret, ACCESS, SHARED)
        os.setxattr(secret.parent, DEFAULT, OPEN_DEFAULT)
    except OSError:
        pytest.skip("no POSIX ACLs here")
    os.setxattr(secret, "user.note", b"kept")
    async with serve("mcp-server-file-write", workspace, "--history-dir", str(tmp_path / "history")) as client:
        result = await client.call_tool(
            "file_write", {"path": "docs/secret.txt", "content": "new\n", "overwrite": True}
        )
    assert not result.is_error, result
    assert secret.read_text() == "new\n"
    assert os.getxattr(secret, ACCESS) == SHARED and os.getxattr(secret, "user.note") == b"kept"
    assert DEFAULT not in os.listxattr(secret)
