"""Red team 106 F3: an ``.env`` file that sets a variable making programs load code, spelt as python-dotenv reads it
and ``python_startup.env_code`` does not: a single-quoted key (``'NODE_OPTIONS'=--require ./tools/hook.js``) or lines
ended by a lone carriage return. ``env_code`` finds names with ``^\\s*(?:export\\s+)?([A-Za-z_]\\w*)\\s*=`` over ``\\n``
lines only; python-dotenv (what ``pipenv run``/``pipenv shell``, ``dotenv run``, the Flask CLI and many apps load)
takes a quoted key and splits lines at ``\\r`` too, and hands ``NODE_OPTIONS`` / ``LD_PRELOAD`` to every program
run from there, outside the box. And ``.flaskenv`` (the Flask CLI loads it with python-dotenv before ``.env``;
the reloader of ``flask run --debug`` starts a new Python with it) is no ``.env`` name to
``python_startup._env_file``. The plain spelling (the control) is refused by file_write and asked by shell_exec.

The files' texts travel as data (env_files.json). A case fails when file_write wrote the file, or when shell_exec
applied a command that made it with no question."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from support import serve
from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio]

CASES: dict[str, str] = json.loads((Path(__file__).resolve().parent / "env_files.json").read_text())


def test_python_dotenv_reads_every_spelling() -> None:
    """(The premise: python-dotenv reads each of them as setting a variable that loads code.)"""
    dotenv = pytest.importorskip("dotenv")
    for case, text in CASES.items():
        values = dotenv.dotenv_values(stream=io.StringIO(text))
        assert {"NODE_OPTIONS", "LD_PRELOAD"} & set(values), (case, values)


@pytest.mark.parametrize("case", sorted(CASES))
async def test_file_write_refuses_an_env_file_that_loads_code(workspace: Path, case: str) -> None:
    async with serve("mcp-server-file-write", workspace) as client:
        result = await client.call_tool("file_write", {"path": ".env", "content": CASES[case]})
    assert not (workspace / ".env").exists(), (case, result.content)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
@pytest.mark.parametrize("case", sorted(CASES))
async def test_shell_exec_asks_before_an_env_file_that_loads_code(workspace: Path, case: str) -> None:
    (workspace / "env.txt").write_bytes(CASES[case].encode())
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, "cp env.txt .env", cwd=str(workspace))
    assert not (workspace / ".env").exists() or person.questions, (case, out.get("transaction"), out.get("changes"))


async def test_file_write_refuses_a_flaskenv_that_loads_code(workspace: Path) -> None:
    async with serve("mcp-server-file-write", workspace) as client:
        result = await client.call_tool("file_write", {"path": ".flaskenv", "content": CASES["control_plain"]})
    assert not (workspace / ".flaskenv").exists(), result.content
