"""Red team 42q C (promise 3): a policy file kept in a project (``--policy <project>/guard.toml``, a team's policy)
was nobody else's to guard: the same project's file_write server, started without it, replaced it with a protected
list that names nothing, and the first server's next start loaded it (a command's ``.envrc`` then landed unasked).
A running server's policy files are registered like its state: hidden from every other server."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest

from support import serve

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


async def test_attack_another_servers_file_write_cannot_rewrite_a_running_servers_policy_file(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    policy = project / "guard.toml"
    policy.write_text("# the team's policy\n[shell_exec]\ndefault_timeout_seconds = 30\n")
    env_a = {"XDG_STATE_HOME": str(tmp_path / "state-a")}
    async with serve("mcp-server-shell-exec", project, "--policy", str(policy), audit=tmp_path / "a.jsonl",
                     env=env_a) as a:  # fmt: skip
        with anyio.fail_after(90):
            await a.call_tool("shell_exec", {"command": "true"})
        env_b = {"XDG_STATE_HOME": str(tmp_path / "state-b")}
        history = ("--history-dir", str(tmp_path / "state-b" / "history"))
        async with serve("mcp-server-file-write", project, *history, audit=tmp_path / "b.jsonl", env=env_b) as b:
            with anyio.fail_after(90):
                wrote = await b.call_tool(
                    "file_write", {"path": "guard.toml", "content": '[paths]\nprotected = [".x"]\n', "overwrite": True}
                )
    assert wrote.is_error, wrote
    assert policy.read_text().startswith("# the team's policy")
