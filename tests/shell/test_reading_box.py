"""Lines that only read (``shell.strings.reading``), through the real server: they run on a read-only view of the roots
instead of a copy, and a view that served one serves the next such line only while nothing of the last is left in
it and every mask is where it was (``shell.sandbox.worker``).

The writes here come from where a line's spelling cannot show them: a git hook (``core.fsmonitor``) that
``git status`` runs. Which view served a call shows from inside as its init's PID namespace (each init is PID 1 of
its own) and the init's threads (/proc/1/task: a view is a thread of the init's).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from support import serve

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing"),
    pytest.mark.skipif(shutil.which("git") is None, reason="git is missing"),
]
SX = "mcp-server-shell-exec"
# The init and the thread (the view) that served the call, then what a later call could find of an earlier one.
LOOK = (
    "echo VIEW; readlink /proc/self/ns/pid; ls /proc/1/task | tr '\\n' ' '; echo; ls -a /tmp /dev/shm /dev/mqueue; "
    "stat -c '%n %a %u' /tmp /dev/shm; stat -c %y /dev/shm | cut -c1-4; "
    "cut -d' ' -f19 /proc/self/stat; grep -E '^Cpus_allowed_list' /proc/self/status; "
    "cat /proc/sysvipc/shm /proc/sysvipc/msg /proc/sysvipc/sem"
)


async def sh(client: Any, command: str) -> dict[str, Any]:
    with anyio.fail_after(60):
        result = await client.call_tool("shell_exec", {"command": command, "timeoutSeconds": 30})
    assert not result.is_error, result
    return dict(result.structured_content)


def with_hook(project: Path, script: str) -> None:
    """A repository whose fsmonitor hook (run by `git status`) is ``script``."""
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    hook = project / "hook.sh"
    hook.write_text("#!/bin/sh\n" + script + "\nexit 1\n")
    hook.chmod(0o755)
    subprocess.run(["git", "-C", str(project), "config", "core.fsmonitor", str(hook)], check=True)


def view_of(out: dict[str, Any]) -> tuple[str, str]:
    init, threads = looked(out).splitlines()[:2]
    return init, threads


def looked(out: dict[str, Any]) -> str:
    """What LOOK printed (after what `git status` printed)."""
    return str(out["stdout"]).split("VIEW\n", 1)[1]


async def test_a_line_judged_to_only_read_cannot_write_the_project_through_a_hook(workspace: Path) -> None:
    # The attack: `git status` is judged to only read; the repository's fsmonitor hook writes into the project and
    # beside it. The view is read-only: the kernel refuses both, and nothing is there to apply or undo.
    with_hook(workspace, f"echo planted > {workspace}/planted; echo planted > {workspace.parent}/outside-planted")
    async with serve(SX, workspace) as client:
        out = await sh(client, "git status --short")
        written = await sh(client, "echo kept > kept.txt")  # a line that writes still works on its copy
    assert out["transaction"] == "unchanged", out
    assert "Read-only file system" in out["stderr"], out
    assert "ran read-only" in out["changes"]["reason"], out
    assert not (workspace / "planted").exists()
    assert not (workspace.parent / "outside-planted").exists()
    assert written["transaction"] == "applied", written
    assert (workspace / "kept.txt").read_text() == "kept\n"


async def test_a_line_that_only_reads_keeps_its_caches_in_the_calls_tmp(workspace: Path) -> None:
    # A program on a read-only view cannot make its cache in the project or HOME: the cache variables name the
    # call's own /tmp (issue 45), unless the call sets them itself.
    async with serve(SX, workspace) as client:
        out = await sh(client, "printenv RUFF_CACHE_DIR MYPY_CACHE_DIR XDG_CACHE_HOME")
        own = await client.call_tool(
            "shell_exec", {"command": "printenv MYPY_CACHE_DIR", "env": {"MYPY_CACHE_DIR": "/tmp/mine"}}
        )
    assert out["transaction"] == "unchanged", out
    assert out["stdout"].split() == ["/tmp/.cache/ruff", "/tmp/.cache/mypy", "/tmp/.cache"], out
    assert own.structured_content is not None and own.structured_content["stdout"] == "/tmp/mine\n", own


LEFTOVERS = {
    "a file in /tmp": "echo left > /tmp/left-behind",
    "a file in /dev/shm": "echo left > /dev/shm/left-behind",
    "a file made and removed again": "echo left > /tmp/gone; rm /tmp/gone",
    "a mode set on /tmp": "chmod 1770 /tmp",
    "times set on /dev/shm": "touch -d '2001-01-01 00:00' /dev/shm",
    "an attribute on /tmp": 'python3 -c \'import os; os.setxattr("/tmp", "user.note", b"left")\'',
    "a lower priority for the view's thread": (
        "python3 -c 'import os, sys; sys.exit(not [os.setpriority(os.PRIO_PROCESS, int(t), 7) "
        'for t in os.listdir("/proc/1/task") if t != "1"])\''
    ),
    "a System V segment": (
        "python3 -c 'import ctypes, sys; sys.exit(ctypes.CDLL(None).shmget(0x5eed, 4096, 0o1600) < 0)'"
    ),
    "a POSIX message queue": (
        "python3 -c 'import ctypes, os, sys; "
        'sys.exit(ctypes.CDLL(None).mq_open(b"/left", os.O_CREAT | os.O_RDWR, 0o600, None) < 0)\''
    ),
}


@pytest.mark.parametrize("what", list(LEFTOVERS))
async def test_nothing_a_line_that_only_reads_leaves_reaches_a_later_one(workspace: Path, what: str) -> None:
    # The attack: a line judged to only read leaves a message in its view (its /tmp and /dev/shm stay writable, and
    # its IPC namespace is the view's) for the next line that view serves. The view is not served again: the next
    # call on that init gets a fresh one, which holds none of it.
    with_hook(workspace, LEFTOVERS[what] + " && echo LEFT-OK >&2")
    async with serve(SX, workspace) as client:
        before = [await sh(client, LOOK) for _ in range(6)]
        hooked = await sh(client, "git status --short; " + LOOK)
        after = [await sh(client, LOOK) for _ in range(4)]
    if "LEFT-OK" not in hooked["stderr"] and what in ("an attribute on /tmp", "a POSIX message queue"):
        pytest.skip(f"{what}: not on this kernel or libc ({hooked['stderr'][-200:]})")
    assert "LEFT-OK" in hooked["stderr"], hooked
    served = [view_of(out) for out in before]
    assert any(a == b for a, b in zip(served, served[2:], strict=False)), served  # a clean view is served again
    init, threads = view_of(hooked)
    following = next(view_of(out) for out in after if view_of(out)[0] == init)
    assert following[1] != threads, (what, hooked["stdout"], following)
    clean = looked(before[-1]).split("\n", 2)[2]
    for out in after:
        assert looked(out).split("\n", 2)[2] == clean, (what, out)
        assert "left" not in out["stdout"], (what, out)


async def test_a_hidden_directory_replaced_between_lines_that_only_read_stays_hidden(isolated_home: Path) -> None:
    # The attack: a view served again keeps the masks it was made with; a hidden directory moved away and made anew
    # (an editor's save, a tool's rewrite) is a new directory the old mask does not cover (the mask went with the
    # old one). The view is not served again: a fresh one masks the new directory. (The home is the allowed root:
    # under the box's own /tmp it would not be seen at all.)
    aws = isolated_home / ".aws"
    aws.mkdir()
    (aws / "credentials").write_text("SECRET-FIRST\n")
    async with serve(SX, isolated_home) as client:
        for _ in range(6):
            seen = await sh(client, "cat ~/.aws/credentials")
            assert "SECRET" not in seen["stdout"] and seen["transaction"] == "unchanged", seen
        aws.rename(isolated_home / ".aws-old")
        aws.mkdir()
        (aws / "credentials").write_text("SECRET-NEW\n")
        for _ in range(4):
            seen = await sh(client, "cat ~/.aws/credentials")
            assert "SECRET" not in seen["stdout"], seen


async def test_many_lines_that_read_and_lines_that_write_in_flight_at_once_each_get_their_own_result(
    workspace: Path,
) -> None:
    lines = {i: (f"echo {i}" if i % 2 else f"echo {i} > f{i}.txt; cat f{i}.txt") for i in range(40)}
    results: dict[int, dict[str, Any]] = {}
    async with serve(SX, workspace) as client:

        async def one(i: int) -> None:
            results[i] = await sh(client, lines[i])

        async with anyio.create_task_group() as group:
            for i in lines:
                group.start_soon(one, i)
    for i, out in results.items():
        assert out["stdout"] == f"{i}\n", (i, out)
        assert out["transaction"] == ("unchanged" if i % 2 else "applied"), (i, out)
        assert (workspace / f"f{i}.txt").exists() != bool(i % 2)
