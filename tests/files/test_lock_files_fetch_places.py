"""Lock files, through the real servers: a lock entry moved to a place the model chose (another host, a repository,
an archive) is asked by shell_exec and refused by file_write — the user's next ``npm ci``/``uv sync``/``cargo
build`` fetches what the lock says, whatever the manifest says; an everyday update from the registry lands. The texts
travel as data (tests/lock_cases.json)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support import serve
from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio]

LOCKS = json.loads((Path(__file__).resolve().parents[1] / "lock_cases.json").read_text())
CASES = [("attacks", name) for name in sorted(LOCKS["attacks"])] + [("everyday", "package-lock.json")]


@pytest.mark.parametrize(("kind", "name"), CASES)
async def test_attack_file_write_refuses_a_lock_moved_elsewhere(workspace: Path, kind: str, name: str) -> None:
    before, after = LOCKS[kind][name]
    (workspace / name).write_text(before)
    async with serve("mcp-server-file-write", workspace) as client:
        result = await client.call_tool("file_write", {"path": name, "content": after, "overwrite": True})
    landed = (workspace / name).read_text() == after
    assert landed is (kind == "everyday"), (name, result.content)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
@pytest.mark.parametrize(("kind", "name"), CASES)
async def test_attack_shell_exec_asks_before_a_lock_moved_elsewhere(workspace: Path, kind: str, name: str) -> None:
    before, after = LOCKS[kind][name]
    (workspace / name).write_text(before)
    (workspace / "new.dat").write_text(after)
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, f"cp new.dat {name}", cwd=str(workspace))
    if kind == "everyday":
        assert not person.questions and (workspace / name).read_text() == after, (person.questions, out.get("changes"))
    else:
        assert person.questions and (workspace / name).read_text() == before, (name, out.get("changes"))
