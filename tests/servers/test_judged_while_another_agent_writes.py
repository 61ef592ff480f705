"""A command's large change set is judged once while another agent keeps writing its notes through file_write (issue
42 item 7), through the real console scripts: the notes cannot matter to that judgement, so it is not judged again
and again, nor at last under the tree lock, where every file_write would wait for it."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from support.two_servers import FW, SX, ask, started


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
def test_a_build_is_judged_once_while_another_agent_writes_its_notes(workspace: Path, tmp_path: Path) -> None:
    shell = started(SX, workspace, tmp_path / "state", tmp_path / "history", None, "--log-level", "info")
    notes = started(FW, workspace, tmp_path / "state-fw", tmp_path / "history-fw")
    command = "mkdir build && for i in $(seq 4000); do echo $i > build/f$i.o; done"
    done: list[dict[str, Any] | None] = []
    thread = threading.Thread(target=lambda: done.append(ask(shell, "shell_exec", {"command": command}, 120)))
    thread.start()
    written, failed = 0, []
    try:
        while thread.is_alive():  # another agent's notes, written as fast as file_write answers
            arguments = {"path": "notes.md", "content": f"{written}\n", "overwrite": True}
            notes.send({"jsonrpc": "2.0", "id": 100 + written, "method": "tools/call",
                        "params": {"name": "file_write", "arguments": arguments}})  # fmt: skip
            while (answer := notes.recv(timeout=30)).get("id") != 100 + written:
                pass
            if answer["result"].get("isError"):
                failed.append(answer["result"])
            written += 1
    finally:
        thread.join(150)
        notes.close()
    assert done and done[0] is not None and not done[0].get("isError"), done
    assert (workspace / "build" / "f4000.o").read_text() == "4000\n"
    assert failed == [] and written > 0
    said = (tmp_path / "state" / f"{SX}-history.err").read_text()
    assert "judged again" not in said and "judged under the tree lock" not in said, said[-2000:]
