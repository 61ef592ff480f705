"""Red team 120 F2: a package-lock entry's ``resolved`` written as a hosted-git shorthand (``someone/evil``,
``someone/evil#main``, ``sourcehut:~someone/evil``) is no place to ``package_locks``: the entry moved to a
repository the model chose lands unasked.

``package_locks._place`` takes a string for a place when it starts like a url (``_URLISH``: a scheme, ``git@``,
scp-like, or the ``github:``/``gitlab:``/``bitbucket:``/``gist:`` prefixes) or names an archive. npm reads a lock's
``resolved`` with npm-package-arg, which takes ``owner/repo`` (and ``owner/repo#ref``) for a GitHub repository and
knows a ``sourcehut:`` shortcut too. The manifest side already knows ``a/b`` (``hook_configs._NPM_FETCHED``); the
lock side does not.

Checked by hand (scratch/npm/verify_npm.py in the notes, kinds ``gh:someone/evil``, ``gh:someone/evil#main``,
``gh:sourcehut:~someone/evil``): ``npm ci`` printed "skipping integrity check for git dependency
ssh://git@github.com/someone/evil.git" and requested ``https://codeload.github.com/someone/evil/tar.gz/HEAD``
(``git.sr.ht/~someone/evil`` for the sourcehut one) — a git dependency's integrity is not checked, and its
``prepare``/``postinstall`` run at the user's next ``npm ci`` (this machine has no route to GitHub, so the fetch
itself failed there).

Controls that pass: ``github:someone/evil`` and ``https://codeload.github.com/someone/evil/tar.gz/main`` are
refused by file_write and asked by shell_exec. Texts travel as data (npm_shorthands.json).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from support import serve
from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio]

CASES: dict[str, dict[str, Any]] = json.loads(
    (Path(__file__).resolve().parent / "npm_shorthands.json").read_text(encoding="utf-8")
)["cases"]


def _set_up(workspace: Path, case: dict[str, Any]) -> Path:
    for name, text in dict(case.get("also") or {}).items():
        (workspace / name).write_text(str(text), encoding="utf-8")
    path = workspace / str(case["path"])
    path.write_text(str(case["before"]), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", sorted(CASES))
async def test_file_write_refuses_a_lock_moved_to_a_repository(workspace: Path, name: str) -> None:
    case = CASES[name]
    path = _set_up(workspace, case)
    async with serve("mcp-server-file-write", workspace) as client:
        result = await client.call_tool("file_write", {"path": case["path"], "content": case["after"],
                                                       "overwrite": True})  # fmt: skip
    assert path.read_text(encoding="utf-8") == case["before"], (name, result.content)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
@pytest.mark.parametrize("name", sorted(CASES))
async def test_shell_exec_asks_before_a_lock_moved_to_a_repository(workspace: Path, name: str) -> None:
    case = CASES[name]
    path = _set_up(workspace, case)
    (workspace / "new.dat").write_text(str(case["after"]), encoding="utf-8")
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, f"cp new.dat {case['path']}", cwd=str(workspace))
    assert person.questions and path.read_text(encoding="utf-8") == case["before"], (name, out.get("changes"))
