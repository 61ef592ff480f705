"""Red team 121 F2: with the history on another file system than the project (``$XDG_STATE_HOME`` on its own disk,
a tmpfs), `mcp-guard undo` exits 0 ("every path back exactly") while what it put back has lost its inode flags
(``chattr``: nodump ``d``, here) and, for a server running as root, its ``trusted.*`` extended attributes.

A pre-image kept whole (same file system) is the user's own inode and comes back with everything. Across file
systems it is copied into the history and copied back (``files.copying`` / ``linux.copy_into``): bytes, mode,
times, owner, ``user.*``/ACL attributes are carried; the inode flags (``FS_IOC_GETFLAGS``) never are, and the
``trusted.*`` namespace is not either. The same for an empty directory a command removed: the undo makes a new one
without the flags the user's had.

What a user loses: metadata they set on purpose — ``chattr +d`` (backups skip the file: after the undo they do not),
``+A``, ``+S``, a directory's ``+d`` that its new files inherit; an attribute a root service keeps in ``trusted.*``
— while the undo says the tree is back exactly. LOW: no code runs, no content is lost.

Control: the same calls with the history on the project's file system: undone with the flags and attributes."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.boxed import Person, run, shell
from support.hooked import git
from support.redteam import mcp_guard

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

CALLS: dict[str, str] = json.loads((Path(__file__).parent / "fidelity_calls.json").read_text())
NODUMP = 0x40  # FS_NODUMP_FL


def _flags(path: Path) -> int:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        return int.from_bytes(fcntl.ioctl(fd, 0x80086601, bytes(8))[:4], sys.byteorder)  # FS_IOC_GETFLAGS
    finally:
        os.close(fd)


def _meta(path: Path) -> tuple[int, dict[str, bytes]]:
    attrs = {n: os.getxattr(path, n, follow_symlinks=False) for n in os.listxattr(path, follow_symlinks=False)}
    return _flags(path) & NODUMP, attrs


@pytest.fixture(params=["same_file_system", "history_elsewhere"])
def where(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if os.geteuid() != 0:
        pytest.skip("trusted.* attributes need root")
    if request.param == "same_file_system":
        yield request.param
        return
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm")
    state = Path(tempfile.mkdtemp(prefix="rt121-state-", dir="/dev/shm"))
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    try:
        yield request.param
    finally:
        shutil.rmtree(state, ignore_errors=True)


def _project(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("user\n")
    (workspace / "keep").mkdir()
    git(workspace, "init", "-q", "-b", "main")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "--no-verify", "-m", "init")
    for target in (workspace / "notes.txt", workspace / "keep"):
        done = subprocess.run(["chattr", "+d", str(target)], capture_output=True, timeout=30, check=False)
        if done.returncode != 0:
            pytest.skip(f"no inode flags here: {done.stderr!r}")
    os.setxattr(workspace / "notes.txt", "trusted.backup-class", b"gold")


async def test_undo_puts_back_flags_and_attributes(workspace: Path, where: str) -> None:
    _project(workspace)
    before = {name: _meta(workspace / name) for name in ("notes.txt", "keep")}
    assert before["notes.txt"] == (NODUMP, {"trusted.backup-class": b"gold"}) and before["keep"][0] == NODUMP
    person = Person(False)
    async with shell(workspace, person) as sx:
        ids = []
        for key in ("rewrite", "remove_dir"):
            out = await run(sx, CALLS[key], cwd=str(workspace))
            assert out["transaction"] == "applied", out
            ids.append(str(out["auditId"]))
    assert not person.questions
    for audit_id in reversed(ids):
        undone = mcp_guard("undo", audit_id)
        assert undone.returncode == 0, undone.stderr  # "every path back exactly"
    assert (workspace / "notes.txt").read_text() == "user\n"
    after = {name: _meta(workspace / name) for name in ("notes.txt", "keep")}
    assert after == before, f"undo exited 0, but ({where}) flags/attributes before {before}, after {after}"
