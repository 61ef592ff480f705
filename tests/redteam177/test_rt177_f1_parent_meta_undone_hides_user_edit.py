"""Red team 177 F1: ``mcp-guard undo`` of a call that wrote a file takes away, and says it succeeded, the user's
later edit of that file (in place, same size, its time kept: ``cp -p``/``rsync -t``/``touch -r``) once a later call
that only changed the file's *directory* (``chmod 700 sub``) has been undone first — rolling back newest first.

``undoing.put_back_since`` counts a later call as touching a path when it names the path, a directory above it or a
path below it; its undo's time then replaces the call's own time in ``revert.as_left``'s ctime check. A later call
that names only ``sub`` (a meta record of the directory) makes ``sub/f.txt`` "put back since" that undo, though that
undo never put the file back, nor looked at it: the user's edit, made while the later call was in force, has a ctime
before the undo's time, so the red team 171/173 answer (a ctime after the call: judged by content, none for a
command: UNDO_CONFLICT) does not see it. Identity (dev, ino, mtime, size) matches: the undo removes the user's file
and exits 0 (the edit is kept in the history under the undo's id only).

A person declines every question (none is asked). Control: the same calls and edit with no directory call in
between: UNDO_CONFLICT, the edit stays.

Answered: ``undoing.put_back_since`` counts a later call for a path only where it reached that path (its path, link,
move or kept name) or put back a directory above it whole — a mode or time set on a directory does not."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from support.boxed import Person, run, shell
from support.redteam import mcp_guard

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

MODEL = "AAAA model text\n"
USER = "BBBB users text\n"  # as many bytes as MODEL


async def _call(workspace: Path, command: str) -> str:
    person = Person(False)
    async with shell(workspace, person) as client:
        out: dict[str, Any] = await run(client, command, cwd=str(workspace))
    assert out["transaction"] == "applied", (command, out, person.questions)
    return str(out["auditId"])


def _undo(audit_id: str) -> str:
    done = mcp_guard("undo", audit_id)
    return "" if done.returncode == 0 else f"exit {done.returncode}: {done.stderr.strip()[-400:]}"


def _users_edit(f: Path) -> None:
    """The user's own edit, outside any tool: in place, same size, the file's time kept."""
    st = os.stat(f)
    with open(f, "r+", encoding="utf-8") as out:
        out.write(USER)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))


async def test_undo_after_an_undone_directory_call_keeps_the_users_edit(workspace: Path) -> None:
    first = await _call(workspace, "printf 'AAAA model text\\n' > sub/f.txt")
    later = await _call(workspace, "chmod 700 sub")
    f = workspace / "sub" / "f.txt"
    _users_edit(f)
    assert _undo(later) == ""  # newest first
    done = _undo(first)
    kept = f.is_file() and f.read_text() == USER
    assert kept or done != "", ("the user's edit gone, undo exited 0", done)


async def test_control_without_the_directory_call_the_undo_refuses(workspace: Path) -> None:
    first = await _call(workspace, "printf 'AAAA model text\\n' > sub/f.txt")
    f = workspace / "sub" / "f.txt"
    _users_edit(f)
    done = _undo(first)
    assert done != "" and f.read_text() == USER, done
