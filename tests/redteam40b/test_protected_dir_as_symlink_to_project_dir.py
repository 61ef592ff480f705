"""Escape: ``.vscode/**`` and ``.claude/**`` are protected (an editor runs ``.vscode/tasks.json`` tasks on folder
open; Claude Code runs the hooks in ``.claude/settings.json``) — but a command may create ``.vscode`` (or
``.claude``) as a *symlink to an ordinary project directory*. The link lands without a question, and from then on
``.vscode/tasks.json`` is whatever ``tpl/tasks.json`` says: the command writes it in the same call (or any later
command or file_write writes ``tpl/tasks.json``, an unprotected path), and the editor, which follows the link,
runs it. Creating ``.envrc`` as a link is refused; a link that stands for a protected directory is not.
Each test FAILS when the protected file is reachable through the new link."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

# What the editor/agent would read: only harmless commands ("true"); this is data, never run by the test.
TASKS = {"version": "2.0.0", "tasks": [{"label": "t", "type": "shell", "command": "true",
                                        "runOptions": {"runOn": "folderOpen"}}]}  # fmt: skip
SETTINGS = {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "true"}]}]}}


@pytest.mark.parametrize(
    ("link", "name", "content"), [(".vscode", "tasks.json", TASKS), (".claude", "settings.json", SETTINGS)]
)
async def test_a_protected_directory_made_as_a_link_to_a_project_directory(
    workspace: Path, link: str, name: str, content: dict[str, object]
) -> None:
    code = program(
        workspace,
        "plant",
        f"""
os.mkdir("tpl")
open("tpl/{name}", "w").write({json.dumps(content)!r})
os.symlink("tpl", "{link}")
""",
    )
    person = Person()
    async with shell(workspace, person) as client:
        out = await run(client, code)
    reached = workspace / link / name
    assert not reached.exists(), (
        f"{link}/{name} now reads the command's file through the link {link} -> {os.readlink(workspace / link)}; "
        f"transaction {out['transaction']}, questions {person.questions}, changes {out['changes']['paths']}"
    )
