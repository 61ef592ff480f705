"""Issue 42 (9): "Text reaching a person (errors, summaries, questions, audit output incl. --json) has control/bidi
characters escaped" — "the registry's refusal text" among them. A server refusing to start because its state lies
inside a root another running server allows prints that server's roots and the state path
(serving/launch.state_in_use -> usage_error) as they are: a directory name with ESC/CR/U+202E reaches the person's
terminal raw. Observed: raw characters on stderr; expected escapes (paths.printable)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio
import pytest

from support import console_script, serve

pytestmark = pytest.mark.anyio

TRICKS = "p\x1b[2K\rok\u202evil"
RAW = ("\x1b", "\r", "\u202e")


async def test_attack_registry_refusal_prints_another_servers_root_raw(tmp_path: Path) -> None:
    big = tmp_path / TRICKS
    big.mkdir()
    (big / "notes.txt").write_text("n\n")
    project = tmp_path / "project"
    project.mkdir()
    env_a = {"XDG_STATE_HOME": str(tmp_path / "state-a")}
    writer = ("--history-dir", str(tmp_path / "state-a" / "history"))  # a server that can write there
    async with serve("mcp-server-file-write", big, *writer, audit=tmp_path / "state-a" / "audit.jsonl",
                     env=env_a) as a:  # fmt: skip
        with anyio.fail_after(60):
            await a.call_tool("file_write", {"path": "w.txt", "content": "w\n"})
        started = subprocess.run(
            [console_script("mcp-server-file-read"), "--audit-log", str(big / "state-b" / "audit.jsonl")],
            cwd=project, input=b"", capture_output=True, timeout=60, check=False,
            env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "state-b")},
        )  # fmt: skip
    assert started.returncode == 2, started
    err = started.stderr.decode("utf-8", "surrogateescape")
    assert "another running server" in err, err
    assert not [repr(c) for c in RAW if c in err], repr(err)
