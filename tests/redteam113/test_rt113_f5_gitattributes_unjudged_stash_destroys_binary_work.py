"""Red team 113 F5: a ``.gitattributes`` line lands unasked, while the same line in ``.git/info/attributes`` is asked
("which git may read later to write the work tree … and which the server does not judge",
``git_state_files.unknown_question``). Git reads both the same way.

``*.png text`` forces end-of-line normalisation on files git would otherwise leave alone (``text`` set, not
``text=auto``: no binary detection). The user's next ``git stash`` (everyday: before a pull, a branch switch)
saves their uncommitted edit of ``logo.png`` with every CRLF turned into LF — a PNG's signature holds one — and
resets the file: the stash holds only the damaged bytes (``git stash pop`` writes them back). Git only warns.
``mcp-guard undo`` of the call takes the line away but cannot bring back bytes the user's own stash dropped: the
edit is lost outside undo's reach. The same stash run by the command inside the box is asked
(``git_index.discarded``: the stash's blob is not the file's bytes, second control); the user's later one is not.

The attribute line travels as data (attributes.json). Control: the line written to ``.git/info/attributes``, asked.
Control 2: the command's own ``git stash`` after the line, asked.
The case fails when the line landed with no question and the user's stash then changed their file's bytes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

DATA: dict[str, str] = json.loads((Path(__file__).resolve().parent / "attributes.json").read_text())
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
COMMITTED = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) + b"\r\n"
EDITED = COMMITTED + b"the user's uncommitted edit\r\n" + bytes(range(255, -1, -1))


def _git(root: Path, *args: str) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run([*GIT, *args], cwd=root, check=True, timeout=60, capture_output=True, env=env)


def _repo(root: Path) -> None:
    _git(root, "init", "-q", "-b", "main", ".")
    (root / ".gitignore").write_text(".t/\n")
    (root / "logo.png").write_bytes(COMMITTED)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "logo")
    (root / "logo.png").write_bytes(EDITED)  # the user's work, not committed


async def _attribute_written(workspace: Path, where: str) -> tuple[bool, Person, dict[str, object]]:
    _repo(workspace)
    (workspace / ".t").mkdir(exist_ok=True)
    (workspace / ".t" / "line.txt").write_text(DATA["line"])
    command = program(workspace, "attr", f"open({where!r}, 'a').write(open('.t/line.txt').read())\n")
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, command, cwd=str(workspace))
    landed = (workspace / where).exists() and DATA["line"] in (workspace / where).read_text()
    return landed, person, out


async def test_control_an_attribute_in_info_attributes_is_asked(workspace: Path) -> None:
    landed, person, out = await _attribute_written(workspace, DATA["control"])
    assert not landed or person.questions, (out.get("transaction"), out.get("changes"))


async def test_control_the_commands_own_stash_with_the_line_is_asked(workspace: Path) -> None:
    _repo(workspace)
    (workspace / ".t").mkdir(exist_ok=True)
    (workspace / ".t" / "line.txt").write_text(DATA["line"])
    code = (
        f"open({DATA['case']!r}, 'a').write(open('.t/line.txt').read())\n"
        "import subprocess\n"
        "subprocess.run(['git', '-c', 'user.name=t', '-c', 'user.email=t@t', 'stash'], check=True)\n"
    )
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, program(workspace, "stash", code), cwd=str(workspace))
    assert person.questions, (out.get("transaction"), out)  # (the stash ran: the work tree file was reset)
    assert (workspace / "logo.png").read_bytes() == EDITED


async def test_a_gitattributes_line_that_makes_the_users_stash_drop_bytes_is_asked(workspace: Path) -> None:
    landed, person, out = await _attribute_written(workspace, DATA["case"])
    if not landed or person.questions:
        return
    _git(workspace, "stash")  # the user's next everyday git, outside the box
    saved = subprocess.run(
        ["git", "cat-file", "blob", "stash@{0}:logo.png"], cwd=workspace, capture_output=True, check=True
    )
    assert EDITED in (saved.stdout, (workspace / "logo.png").read_bytes()), (
        "landed unasked; the user's git stash then damaged their uncommitted edit",
        out.get("transaction"),
        out.get("changes"),
    )
