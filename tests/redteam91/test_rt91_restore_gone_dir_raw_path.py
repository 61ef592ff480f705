"""Red team 91 F2 (issue 42, claim 9): text from a path that reaches a person has control characters escaped — but
``mcp-guard history restore ID`` whose directories are gone prints the entry's path raw on stderr
(admin/app.py ``history_restore``: ``usage_error(PROG, f"the directories {...} that {kept.path} lay in are gone")``;
``usage_error`` prints its message as it is). A path a model chose (a file_write with ``createDirs``) holding an
ANSI/OSC sequence reaches the person's terminal as a live escape (here an OSC retitling the terminal).

Safe behaviour: stderr holds no control character but the final newline."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import anyio
import pytest

from support import console_script, serve

pytestmark = pytest.mark.anyio

ODD_DIR = "d\x1b]0;owned\x07\x1b[2K"


async def test_restore_of_an_entry_whose_directory_is_gone_escapes_its_path(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    log = tmp_path / "audit.jsonl"
    async with serve("mcp-server-file-write", proj, audit=log) as client:
        with anyio.fail_after(60):
            for content in ("first\n", "second\n"):
                result = await client.call_tool(
                    "file_write",
                    {"path": f"{ODD_DIR}/n.txt", "content": content, "overwrite": True, "createDirs": True},
                )
                assert not result.is_error, result
    backup = result.structured_content["backup"]
    shutil.rmtree(proj)  # the project moved away since: the directories the entry lay in are gone
    done = subprocess.run(
        [console_script("mcp-guard"), "history", "restore", backup, "--audit-log", str(log)],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode != 0
    assert "are gone" in done.stderr, done.stderr
    shown = done.stderr.rstrip("\n")
    assert "\x1b" not in shown and "\x07" not in shown, repr(done.stderr)
