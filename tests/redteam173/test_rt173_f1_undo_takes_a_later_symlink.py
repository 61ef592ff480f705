"""Red team 173 F1: ``mcp-guard undo`` of a call that made a symlink takes away, and says it succeeded, the user's
later symlink at that name (pointing elsewhere) once a later call has set the link's time back.

``revert.as_left`` takes a symlink for "as the call left it" when ``identity`` — (device, inode, mtime, size) —
matches the record (``changed_since`` looks at regular files only). The rt171 answer (a change time after the call:
judged by content) is for regular files only. On ext4 the user's ``ln -sfn other l`` (unlink, then symlink) gets the
inode number just freed; a target of the same length keeps the size (a background job's look copies the model's link
into the real tree with ``nofollow.copy_beside``, a new link made in the project's directory, so the user's link
takes that number); the modification time is the one thing left, and a later call sets it back unasked (``touch -h
-m -d @T l``, a metadata change). docs/shell_exec.md "Undo": it "refuses, changing nothing, when a path changed
again afterwards"; "it exits 0 only when every path is back exactly". Here it exits 0 and the user's link is gone
from the project (kept under the undo's id in the history only).

A person declines every question (none is asked). Control: the same calls and the same re-link without the later
``touch``: the undo refuses (UNDO_CONFLICT) and the user's link stays.

Answered: ``revert.as_left`` takes anything but a directory whose change time moved after the call (a meta record's
check too) for as the call left it only by its content: a link, which has no recorded digest, is UNDO_CONFLICT."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from support import console_script
from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

MODEL = "aaaa.txt"
USER = "bbbb.txt"  # as long as MODEL: the link's size stays


def _undo(audit_id: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([console_script("mcp-guard"), "undo", audit_id], capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip


def _relink(path: Path) -> tuple[int, int, bool]:
    """The user's own ``ln -sfn bbbb.txt l`` (outside any tool). Returns the time the call had left, the new inode
    number, and whether the new link took the same inode number (ext4 does, at once)."""
    before = os.lstat(path)
    os.unlink(path)
    os.symlink(USER, path)
    after = os.lstat(path)
    return before.st_mtime_ns, after.st_ino, after.st_ino == before.st_ino


async def _session(workspace: Path, *, set_time_back: bool) -> tuple[str, list[Any], Person, bool]:
    (workspace / MODEL).write_text("a\n")
    (workspace / USER).write_text("b\n")
    person = Person(False)
    told: list[Any] = []
    async with shell(workspace, person) as client:
        # A background job (its look copies the link into the real tree: a new link made beside the user's files).
        looks = [await run(client, f"ln -s {MODEL} l && sleep 6", cwd=str(workspace), yieldAfterSeconds=3)]
        with anyio.fail_after(120):
            while looks[-1]["status"] == "running":
                looks.append(await run(client, "", jobId=looks[0]["jobId"], yieldAfterSeconds=5))
        told += [(k.get("status"), k.get("transaction"), k.get("auditId")) for k in looks]
        out = looks[0]
        assert os.readlink(workspace / "l") == MODEL, told
        left, ino, same = _relink(workspace / "l")
        told.append(("relinked", ino, os.lstat(workspace / MODEL).st_ino, same))
        if set_time_back:
            sec, ns = divmod(left, 10**9)
            back = await run(client, f"touch -h -m -d @{sec}.{ns:09d} l", cwd=str(workspace))
            told.append(("touch", back.get("transaction"), (back.get("changes") or {}).get("summary")))
    return str(out["auditId"]), told, person, same


async def test_undo_of_a_call_that_made_a_link_keeps_the_users_later_link(workspace: Path) -> None:
    # ext4 hands the number just freed to the next new inode of that directory's group unless another process on the
    # machine takes it first: a few tries, each in a directory of its own.
    for attempt in range(5):
        where = workspace / f"try{attempt}"
        where.mkdir()
        audit_id, told, person, same = await _session(where, set_time_back=True)
        if same:
            break
    else:
        pytest.skip(f"the file system gave the new link another inode number {told}")
    done = _undo(audit_id)
    link = where / "l"
    kept = link.is_symlink() and os.readlink(link) == USER
    assert kept or done.returncode != 0, ("the user's link gone, undo said", done.returncode, done.stdout,
                                          done.stderr, told, person.questions)  # fmt: skip


async def test_control_without_the_time_set_back_the_undo_refuses(workspace: Path) -> None:
    audit_id, told, _person, _same = await _session(workspace, set_time_back=False)
    done = _undo(audit_id)
    link = workspace / "l"
    assert done.returncode != 0 and os.readlink(link) == USER, (done.returncode, done.stdout, done.stderr, told)
