"""Red team 171 F1: ``mcp-guard undo`` of a call that wrote a file takes away, and says it succeeded, the user's later
edit of that file (made in place, same size) once a later call has set the file's modification time back.

``revert.as_left`` takes a regular file for "as the call left it" when ``identity`` — (device, inode, mtime, size) —
matches the record (``changed_since`` looks at mode, names and attributes only; the ctime, which nobody can set
back, is not looked at). An edit in place keeps the inode; a same-size edit keeps the size; the one thing left is
the modification time, which a later call sets back unasked (``touch -m -d @T f.txt``: a metadata change, no
question). docs/shell_exec.md "Undo": it "refuses, changing nothing, when a path changed again afterwards — its
content, …"; "it exits 0 only when every path is back exactly". Here it exits 0 and the user's edit is gone from the
project (kept under the undo's id in the history only: an undo of the undo brings it back, eviction may take it).
The same check serves file_write's records (second test) and an undo of an undo (its ``swap`` records).

A person declines every question (none is asked). Control: the same calls and edit without the later ``touch``:
the undo refuses (UNDO_CONFLICT) and the edit stays.

Answered: ``revert.as_left`` takes a regular file whose change time moved after the call for as the call left it
only by its content (file_write's records keep its digest; a command's, none: UNDO_CONFLICT)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from support import console_script, serve
from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

ORIGINAL = "the user's first notes\n"
MODEL = "AAAA model text\n"
USER = "BBBB users text\n"  # as many bytes as MODEL: an edit in place of one word


def _undo(audit_id: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([console_script("mcp-guard"), "undo", audit_id], capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip


def _edit_in_place(path: Path) -> int:
    """The user's own edit (outside any tool): same inode, same size. Returns the time the call had left."""
    left = os.stat(path).st_mtime_ns
    with open(path, "r+", encoding="utf-8") as f:
        f.write(USER)
    assert os.stat(path).st_mtime_ns != left
    return left


async def _time_back(workspace: Path, person: Person, left: int, told: list[Any]) -> None:
    sec, ns = divmod(left, 10**9)
    async with shell(workspace, person) as client:
        out = await run(client, f"touch -m -d @{sec}.{ns:09d} f.txt", cwd=str(workspace))
    told.append(("touch", out.get("transaction"), (out.get("changes") or {}).get("summary")))


async def _shell_session(workspace: Path, *, set_time_back: bool) -> tuple[str, list[Any], Person]:
    person = Person(False)
    told: list[Any] = []
    async with shell(workspace, person) as client:
        out = await run(client, "printf 'AAAA model text\\n' > f.txt", cwd=str(workspace))
    told.append((out.get("transaction"), out.get("auditId")))
    assert (workspace / "f.txt").read_text() == MODEL, told
    left = _edit_in_place(workspace / "f.txt")
    if set_time_back:
        await _time_back(workspace, person, left, told)
    return str(out["auditId"]), told, person


async def _file_write_session(workspace: Path, *, set_time_back: bool) -> tuple[str, list[Any], Person]:
    (workspace / "f.txt").write_text(ORIGINAL)
    person = Person(False)
    told: list[Any] = []
    async with serve("mcp-server-file-write", workspace, elicitation_callback=person) as client:
        with anyio.fail_after(60):
            result = await client.call_tool("file_write", {"path": "f.txt", "content": MODEL, "overwrite": True})
    assert not result.is_error, result
    found = dict(result.structured_content or {})
    told.append(found)
    audit_id = str(found.get("auditId") or found.get("audit_id") or "")
    assert audit_id, found
    left = _edit_in_place(workspace / "f.txt")
    if set_time_back:
        await _time_back(workspace, person, left, told)
    return audit_id, told, person


async def test_undo_of_a_shell_write_keeps_the_users_same_size_edit(workspace: Path) -> None:
    audit_id, told, person = await _shell_session(workspace, set_time_back=True)
    done = _undo(audit_id)
    f = workspace / "f.txt"
    kept = f.is_file() and f.read_text() == USER
    assert kept or done.returncode != 0, ("the user's edit gone, undo said", done.returncode, done.stdout,
                                          done.stderr, told, person.questions)  # fmt: skip


async def test_undo_of_a_file_write_keeps_the_users_same_size_edit(workspace: Path) -> None:
    audit_id, told, person = await _file_write_session(workspace, set_time_back=True)
    done = _undo(audit_id)
    f = workspace / "f.txt"
    kept = f.is_file() and f.read_text() == USER
    assert kept or done.returncode != 0, ("the user's edit gone, undo said", done.returncode, done.stdout,
                                          done.stderr, told, person.questions)  # fmt: skip


async def test_control_without_the_time_set_back_the_undo_refuses(workspace: Path) -> None:
    audit_id, told, _person = await _shell_session(workspace, set_time_back=False)
    done = _undo(audit_id)
    assert done.returncode != 0 and (workspace / "f.txt").read_text() == USER, (done.returncode, done.stdout,
                                                                                done.stderr, told)  # fmt: skip


async def test_control_file_write_without_the_time_set_back_the_undo_refuses(workspace: Path) -> None:
    audit_id, told, _person = await _file_write_session(workspace, set_time_back=False)
    done = _undo(audit_id)
    assert done.returncode != 0 and (workspace / "f.txt").read_text() == USER, (done.returncode, done.stdout,
                                                                                done.stderr, told)  # fmt: skip
