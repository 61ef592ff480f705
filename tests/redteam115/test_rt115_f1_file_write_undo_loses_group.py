"""Red team 115 F1: `mcp-guard undo` of a file_write exits 0 ("every path back exactly") while the file it put back
has lost its group owner: it comes back with the server's group.

file_write keeps what it replaces as a *copy* where the history lies on another file system than the project
(``$XDG_STATE_HOME`` on another disk, a tmpfs) and — since commit f3e10a5 — wherever the file has other names.
That copy (``HistoryStore.save`` / ``_save``) gets the file's bytes, xattrs, mode and times but never its owner and
group (``files.copying._owned_like``, which every pre-image shell_exec copies gets since red team 60 F3, is not
called there). The undo then puts the copy back (renamed in, or copied back from the other file system with the
copy's own owner and group), and says success.

What a user loses: a group-shared file (``chgrp deploy secrets.env; chmod 640``) comes back from the undo owned by
the server user's primary group with the same mode bits: the ``deploy`` group can no longer read it, and, where the
primary group is a shared one (``users``), every member of that group now can (0660: write it). The undo said the
tree is back exactly.

Controls: the same replacement made by a shell_exec command (a new file renamed over the name) is undone with the
group back, in both set-ups. A person declines every question (none is asked)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from support import serve
from support.boxed import Person, run, shell
from support.redteam import mcp_guard

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

FW = "mcp-server-file-write"
GID = 4242  # a group of the user's (root here may give any): the file's, not the server's
REPLACE_BY_COMMAND = "printf 'TOKEN=model\\n' > t.tmp && mv -f t.tmp shared.env"


@pytest.fixture(params=["history_elsewhere", "other_name_removed"])
def setup(request: pytest.FixtureRequest, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if os.geteuid() != 0:
        pytest.skip("giving a file a group of another id needs root here")
    target = workspace / "shared.env"
    target.write_text("TOKEN=team-only\n")
    os.chown(target, -1, GID)
    target.chmod(0o640)
    if request.param == "history_elsewhere":
        if not os.path.isdir("/dev/shm"):
            pytest.skip("no /dev/shm")
        state = Path(tempfile.mkdtemp(prefix="rt115-state-", dir="/dev/shm"))  # the history on another file system
        monkeypatch.setenv("XDG_STATE_HOME", str(state))
        try:
            yield request.param
        finally:
            shutil.rmtree(state, ignore_errors=True)
    else:
        os.link(target, workspace / "shared.env.bak")  # another name: file_write keeps a copy
        yield request.param


async def _file_write(workspace: Path) -> str:
    async with serve(FW, workspace) as client:
        out = await client.call_tool(
            "file_write", {"path": str(workspace / "shared.env"), "content": "TOKEN=model\n", "overwrite": True}
        )
    assert not out.is_error, out
    return str(dict(out.structured_content or {})["auditId"])


async def _command(workspace: Path, command: str) -> str:
    async with shell(workspace, Person(False)) as sx:
        res = await run(sx, command, cwd=str(workspace))
    assert res["transaction"] == "applied", res
    return str(res["auditId"])


async def _session(workspace: Path, setup: str, by_command: bool) -> None:
    first = await (_command(workspace, REPLACE_BY_COMMAND) if by_command else _file_write(workspace))
    if setup == "other_name_removed":
        await _command(workspace, "rm shared.env.bak")  # a later call, still in force: not undone
    undone = mcp_guard("undo", first)
    assert undone.returncode == 0, undone.stderr


async def test_control_a_commands_replacement_undone_keeps_the_group(workspace: Path, setup: str) -> None:
    await _session(workspace, setup, by_command=True)
    st = os.lstat(workspace / "shared.env")
    assert (workspace / "shared.env").read_text() == "TOKEN=team-only\n"
    assert (st.st_gid, st.st_mode & 0o7777) == (GID, 0o640), (st.st_gid, oct(st.st_mode))


async def test_file_write_undone_gives_the_file_the_servers_group(workspace: Path, setup: str) -> None:
    await _session(workspace, setup, by_command=False)
    st = os.lstat(workspace / "shared.env")
    assert (workspace / "shared.env").read_text() == "TOKEN=team-only\n"
    assert (st.st_gid, st.st_mode & 0o7777) == (GID, 0o640), (
        f"undo said every path is back exactly, but shared.env is group {st.st_gid} (was {GID}), mode "
        f"{oct(st.st_mode & 0o7777)}"
    )
