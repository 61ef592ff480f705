"""Red team 10: a tree the history keeps by copying (its store on another file system: XDG_STATE_HOME on a tmpfs)
is copied entry by entry since 5de89d9 (``files.kept._copy_tree``). Undo must give the tree back as it was."""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import pytest

from support.acls import ACCESS, acls, acls_work, project
from support.boxed import run, shell, snap, undo
from support.fidelity import snapshot

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


async def test_acls_in_a_tree_kept_by_copy_come_back_on_undo(workspace: Path, state_on_tmpfs: Path) -> None:
    """Every command through one server, each in a project of its own (``c<n>``), undone once the server is gone;
    each failing one is named."""
    if not acls_work(workspace / "probe") or not acls_work(state_on_tmpfs / "probe"):
        pytest.skip("no POSIX ACLs here")
    commands = ["rm -rf team", "rm -rf shared", "rm acl.txt"]
    roots = [workspace / f"c{n}" for n in range(len(commands))]
    for root in roots:
        root.mkdir()
        project(root)
        assert os.getxattr(root / "team" / "f", ACCESS)
    calls = []
    async with shell(workspace) as client:
        for command, root in zip(commands, roots, strict=True):
            before, before_acls = snapshot(root), acls(root)
            calls.append((before, before_acls, await run(client, command, cwd=str(root))))

    def entries(snap: object) -> dict[str, object]:
        return {k: v for k, v in snap.entries.items() if k != "." and not k.startswith(".mcp-guard")}  # type: ignore[attr-defined]

    problems: list[str] = []
    for command, root, (before, before_acls, out) in zip(commands, roots, calls, strict=True):
        if out["transaction"] != "applied":
            problems.append(f"[{command}] not applied: {out}")
            continue
        undo_id, why = undo(str(out["auditId"]))
        if not undo_id:
            problems.append(f"[{command}] undo failed: {why}")
            continue
        if entries(snapshot(root)) != entries(before):
            problems.append(f"[{command}] undo did not put the tree back")
        if acls(root) != before_acls:
            problems.append(f"[{command}] undo did not put the ACLs back")
    assert not problems, "\n".join(problems)


async def test_a_socket_in_a_tree_deleted_with_the_history_on_another_file_system(
    workspace: Path, state_on_tmpfs: Path
) -> None:
    # A dev server's socket left in a build directory: ``rm -rf build`` works natively.
    (workspace / "build").mkdir()
    (workspace / "build" / "out.txt").write_text("o\n")
    sock = socket.socket(socket.AF_UNIX)
    here = os.getcwd()
    os.chdir(workspace / "build")
    try:
        sock.bind("dev.sock")
    finally:
        os.chdir(here)
        sock.close()
    async with shell(workspace) as client:
        out = await run(client, "rm -rf build", cwd=str(workspace))
    assert not (workspace / "build").exists(), out["changes"]
    assert out["transaction"] == "applied", out


async def test_a_deep_tree_deleted_with_the_history_on_another_file_system(
    workspace: Path, state_on_tmpfs: Path
) -> None:
    # 60 levels of 80-character names: deeper than PATH_MAX (4096) once under the store's own path.
    name = "n" * 80
    fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(60):
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        leaf = os.open("leaf.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(leaf, b"leaf\n")
        os.close(leaf)
    finally:
        os.close(fd)
    async with shell(workspace) as client:
        out = await run(client, f"rm -rf {name}", cwd=str(workspace))
    assert not (workspace / name).exists(), out["changes"]
    assert out["transaction"] == "applied", out
    undo_id, why = undo(str(out["auditId"]))
    assert undo_id, why
    assert (workspace / name).is_dir()


async def test_hard_links_within_a_tree_kept_by_copy_come_back_on_undo(workspace: Path, state_on_tmpfs: Path) -> None:
    d = workspace / "d"
    (d / "in").mkdir(parents=True)
    (d / "a").write_text("a\n")
    os.link(d / "a", d / "in" / "b")
    os.mkfifo(d / "pipe")
    with open(d / "img", "wb") as f:
        f.truncate(8 << 20)
        f.write(b"head")
    before = snap(workspace)
    async with shell(workspace) as client:
        out = await run(client, "rm -rf d", cwd=str(workspace))
    assert out["transaction"] == "applied", out
    assert not d.exists(), out["changes"]
    undo_id, why = undo(str(out["auditId"]))
    assert undo_id, why
    after = {k: v for k, v in snap(workspace).items() if not k.startswith(".mcp-guard")}
    assert after == before
    assert os.lstat(d / "img").st_blocks * 512 <= 64 << 10
