"""Red team 106 F2: a program the user's own git config names by its path, under a key ``git_dirs._PROGRAM_KEYS``
does not list, is not protected: a model's file_write (or a command) rewrites it unasked and the user's next ``git
submodule update`` (``submodule.<name>.update = !cmd``), ``git archive --format=tgz`` (``tar.<format>.command``),
``git fetch``/``push`` (``core.alternateRefsCommand``), ``git imap-send`` (``imap.tunnel``), ``git send-email``
(``sendemail.toCmd`` / ``ccCmd``), ``git instaweb`` or ``git help`` (``man.<tool>.cmd``) runs the rewritten file
outside the box. The control, ``core.sshCommand`` naming the same kind of file, is refused.
(file_write refuses an executable or a ``*.sh`` outright, so the configs run it through ``python3``: git runs the
value with the shell.)

The keys travel as data (git_program_keys.json); the program is a harmless script the test writes. A case fails
when file_write replaced the program's bytes."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from support import serve
from support.hooked import git

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("git") is None, reason="git is missing")]

KEYS: dict[str, str] = json.loads((Path(__file__).resolve().parent / "git_program_keys.json").read_text())


def _project(root: Path, key: str) -> Path:
    git(root, "init", "-q")
    program = root / "tools" / "helper.py"
    program.parent.mkdir()
    program.write_text("#!/usr/bin/env python3\nprint(1)\n")
    value = ("!" if key.startswith("submodule.") else "") + f"python3 {program}"
    git(root, "config", key, value)
    return program


def test_git_archive_runs_the_tar_format_command(workspace: Path) -> None:
    """(The premise, for one key: ``git archive --format=tgz`` runs what ``tar.tgz.command`` names.)"""
    program = _project(workspace, "tar.tgz.command")
    marker = workspace / "ran"
    body = "import sys, pathlib\npathlib.Path(sys.argv[1]).write_text('ran')\n"
    body += "sys.stdout.buffer.write(sys.stdin.buffer.read())\n"
    program.write_text(body)
    git(workspace, "config", "tar.tgz.command", f"python3 {program} {marker}")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "--no-verify", "-m", "init")
    subprocess.run(["git", "archive", "--format=tgz", "-o", str(workspace.parent / "a.tgz"), "HEAD"], cwd=workspace,
                   check=True, timeout=30, capture_output=True)  # fmt: skip
    assert marker.read_text() == "ran"


@pytest.mark.parametrize("case", sorted(KEYS))
async def test_file_write_refuses_a_program_git_config_names(workspace: Path, case: str) -> None:
    program = _project(workspace, KEYS[case])
    before = program.read_bytes()
    async with serve("mcp-server-file-write", workspace) as client:
        content = "#!/usr/bin/env python3\nprint(2)\n"
        arguments = {"path": "tools/helper.py", "content": content, "overwrite": True}
        result = await client.call_tool("file_write", arguments)
    assert program.read_bytes() == before, (case, result.structured_content)
