"""Red team 114 F1: red team 113 F5's answer (``hook_configs.attribute_conversions``) reads ``.gitattributes`` as
Python reads text (``str.splitlines``), git does not. Git splits the file on LF only, and splits a line's fields on
``" \\t\\r\\n"`` (attr.c's ``blank``): ``*.png<CR>text`` is, to git, the pattern ``*.png`` with the attribute
``text`` set (``git check-attr`` says so). Python's ``splitlines`` ends a line at the CR: the judge sees a line
``*.png`` (no attributes) and a line whose *pattern* is ``text`` (no attributes): nothing converting, nothing asked.

So the line of red team 113 F5 lands unasked from shell_exec (a person who declines everything) and file_write
writes it; the user's next ``git stash`` then keeps their uncommitted edit of ``logo.png`` with its CRLFs turned to
LF and resets the file: the edit survives nowhere, past ``mcp-guard undo``'s reach (as in 113 F5).

Controls: the same line with a space (``*.png text``), asked by shell_exec and refused by file_write.
The lines travel as data (attributes_cr.json)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from support import serve
from support.boxed import Person, program, run, shell

pytestmark = [pytest.mark.anyio]

DATA: dict[str, str] = json.loads((Path(__file__).resolve().parent / "attributes_cr.json").read_text())
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
COMMITTED = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) + b"\r\n"
EDITED = COMMITTED + b"the user's uncommitted edit\r\n" + bytes(range(255, -1, -1))
BWRAP = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")


def _git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run([*GIT, *args], cwd=root, check=True, timeout=60, capture_output=True, env=env, text=True)
    return done.stdout


def _repo(root: Path) -> None:
    _git(root, "init", "-q", "-b", "main", ".")
    (root / ".gitignore").write_text(".t/\n")
    (root / "logo.png").write_bytes(COMMITTED)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "logo")
    (root / "logo.png").write_bytes(EDITED)  # the user's work, not committed


def _landed(workspace: Path, line: str) -> bool:
    path = workspace / DATA["path"]
    return path.exists() and line.encode() in path.read_bytes()


def _users_stash_kept_the_edit(workspace: Path) -> bool:
    _git(workspace, "stash")  # the user's next everyday git, outside the box
    saved = subprocess.run(
        ["git", "cat-file", "blob", "stash@{0}:logo.png"], cwd=workspace, capture_output=True, check=True
    )
    return EDITED in (saved.stdout, (workspace / "logo.png").read_bytes())


async def _shell_writes(workspace: Path, line: str) -> tuple[Person, dict[str, object]]:
    _repo(workspace)
    (workspace / ".t").mkdir(exist_ok=True)
    (workspace / ".t" / "line.bin").write_bytes(line.encode())
    code = f"open({DATA['path']!r}, 'ab').write(open('.t/line.bin', 'rb').read())\n"
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, program(workspace, "attr", code), cwd=str(workspace))
    return person, out


def test_git_reads_the_cr_line_as_text_set(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q", ".")
    (tmp_path / DATA["path"]).write_bytes(DATA["case"].encode())
    assert "logo.png: text: set" in _git(tmp_path, "check-attr", "text", "logo.png")


@BWRAP
async def test_control_the_space_line_is_asked(workspace: Path) -> None:
    person, out = await _shell_writes(workspace, DATA["control"])
    assert not _landed(workspace, DATA["control"]) or person.questions, (out.get("transaction"), out.get("changes"))


@BWRAP
async def test_the_cr_line_is_asked(workspace: Path) -> None:
    person, out = await _shell_writes(workspace, DATA["case"])
    if not _landed(workspace, DATA["case"]) or person.questions:
        return
    assert _users_stash_kept_the_edit(workspace), (
        "landed unasked; the user's git stash then damaged their uncommitted edit",
        out.get("transaction"),
        out.get("changes"),
    )


async def _file_write(workspace: Path, line: str) -> bool:
    _repo(workspace)
    async with serve("mcp-server-file-write", workspace) as client:
        await client.call_tool("file_write", {"path": DATA["path"], "content": line})
    return _landed(workspace, line)


async def test_control_file_write_refuses_the_space_line(workspace: Path) -> None:
    assert not await _file_write(workspace, DATA["control"])


async def test_file_write_refuses_the_cr_line(workspace: Path) -> None:
    if not await _file_write(workspace, DATA["case"]):
        return
    assert _users_stash_kept_the_edit(workspace), "file_write wrote it; the user's git stash then damaged the edit"
