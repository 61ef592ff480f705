"""Red team 115 F2: file_write replacing a group-shared file gives it the server's primary group and keeps its
mode bits: the file's group loses access and the server user's group gains it.

docs/file_write.md: "The permission bits are kept, and so are its access control list and user.* attributes" —
as a file rewritten in place keeps them (``writing._carry_attributes``; red team 4 F3 was the ACL's mask widening a
group's access). The group owner is not carried: the new inode is made with the server's group, then given the old
mode (``st.st_mode & 0o666``). A ``chgrp deploy secrets.env; chmod 640`` file becomes ``<user's group> 0640``:
``deploy`` can no longer read it, and where the user's primary group is a shared one (``users``) its every member
now can (0660: write it). Nothing is asked; nothing says the group changed. The server user may give the file its
group back (it is a group of theirs: ``fchown(fd, -1, gid)``), as ``files.copying._owned_like`` does for copies.

Control: the user's own in-place rewrite (``open(..., "w")``, what ``>`` and most editors do) keeps the group; the
mode bits are kept by file_write (they are)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from support import serve

pytestmark = [pytest.mark.anyio]

FW = "mcp-server-file-write"
GID = 4242


def _shared(workspace: Path) -> Path:
    if os.geteuid() != 0:
        pytest.skip("giving a file a group of another id needs root here")
    target = workspace / "shared.env"
    target.write_text("TOKEN=team-only\n")
    os.chown(target, -1, GID)
    target.chmod(0o640)
    return target


def test_control_an_in_place_rewrite_keeps_the_group(workspace: Path) -> None:
    target = _shared(workspace)
    with open(target, "w", encoding="utf-8") as out:
        out.write("TOKEN=user\n")
    st = os.lstat(target)
    assert (st.st_gid, st.st_mode & 0o7777) == (GID, 0o640)


async def test_file_write_gives_a_group_shared_file_the_servers_group(workspace: Path) -> None:
    target = _shared(workspace)
    async with serve(FW, workspace) as client:
        out = await client.call_tool("file_write", {"path": str(target), "content": "TOKEN=model\n", "overwrite": True})
    assert not out.is_error, out
    st = os.lstat(target)
    assert st.st_mode & 0o7777 == 0o640  # the mode bits are kept
    assert st.st_gid == GID, f"shared.env is now group {st.st_gid} with mode 0640 (was group {GID})"
