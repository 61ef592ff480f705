"""Red team 11: trees kept by copy (the history on another file system: XDG_STATE_HOME on a tmpfs), copied entry
by entry beneath descriptors since 8df9f9c (``files.kept._copy_entry``). ``rm -rf`` works natively; undo must give
the tree back as it was."""

from __future__ import annotations

import os
import shutil
import socket
import stat
from pathlib import Path

import pytest

from support.boxed import run, shell, snap, undo

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


def bound(directory: Path, name: str) -> None:
    """A socket node ``name`` in ``directory`` (bound relative to it: any name a program can give one)."""
    sock = socket.socket(socket.AF_UNIX)
    here = os.getcwd()
    os.chdir(directory)
    try:
        sock.bind(name)
    finally:
        os.chdir(here)
        sock.close()


async def test_fifo_modes_in_a_tree_kept_by_copy_come_back_on_undo(workspace: Path, state_on_tmpfs: Path) -> None:
    # A shared pipe (``mkfifo -m 666``) and a group one: ``os.mkfifo`` is subject to the umask, no chmod after.
    d = workspace / "d"
    d.mkdir()
    os.mkfifo(d / "shared.pipe")
    os.chmod(d / "shared.pipe", 0o666)
    os.mkfifo(d / "group.pipe")
    os.chmod(d / "group.pipe", 0o660)
    before = snap(workspace)
    async with shell(workspace) as client:
        out = await run(client, "rm -rf d", cwd=str(workspace))
    assert out["transaction"] == "applied", out
    assert not d.exists(), out["changes"]
    undo_id, why = undo(str(out["auditId"]))
    assert undo_id, why
    modes = {p: oct(stat.S_IMODE(os.lstat(d / p).st_mode)) for p in ("shared.pipe", "group.pipe")}
    assert modes == {"shared.pipe": "0o666", "group.pipe": "0o660"}
    after = {k: v for k, v in snap(workspace).items() if not k.startswith(".mcp-guard")}
    assert after == before


async def test_a_socket_with_a_long_name_in_a_tree_deleted_with_the_history_on_another_file_system(
    workspace: Path, state_on_tmpfs: Path
) -> None:
    # A socket a program bound by a name relative to its directory (sun_path counts only that name): 100 bytes.
    build = workspace / "build"
    build.mkdir()
    (build / "out.txt").write_text("o\n")
    bound(build, "s" * 100)
    async with shell(workspace) as client:
        out = await run(client, "rm -rf build", cwd=str(workspace))
    assert not build.exists(), str(out["changes"])
    assert out["transaction"] == "applied", out
    assert out["changes"]["conflicts"] == 0, out["changes"]


async def test_many_hard_links_within_a_tree_kept_by_copy_come_back_on_undo(
    workspace: Path, state_on_tmpfs: Path
) -> None:
    # A vendored tree (pnpm, a git object store, a backup made with ``cp -al``) with 300 files of two names each.
    d = workspace / "d"
    (d / "a").mkdir(parents=True)
    (d / "b").mkdir()
    for i in range(300):
        (d / "a" / f"f{i}").write_text(f"{i}\n")
        os.link(d / "a" / f"f{i}", d / "b" / f"f{i}")
    before = snap(workspace)
    async with shell(workspace) as client:
        out = await run(client, "rm -rf d", cwd=str(workspace))
    assert out["transaction"] == "applied", out
    assert not d.exists(), out["changes"]
    undo_id, why = undo(str(out["auditId"]))
    assert undo_id, why
    separate = [i for i in range(300) if not os.path.samefile(d / "a" / f"f{i}", d / "b" / f"f{i}")]
    assert not separate, (len(separate), separate[:4])
    assert len(before) == len([k for k in snap(workspace) if not k.startswith(".mcp-guard")])
