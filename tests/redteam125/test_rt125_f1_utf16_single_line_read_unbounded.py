"""Red team 125 F1: file_read holds a whole UTF-16 (or UTF-32) line in memory, and copies it once per MiB read.

``reading._read_page_decoded`` (the path for encodings whose newline is not one byte) keeps the text after the
last newline seen in ``carry`` and builds ``block = carry + text`` for every 1 MiB chunk; ``take`` (which applies
``max_read_bytes``) is only reached at a newline or at the end of the file. A file that is one long line — a
UTF-16 export, a minified JSON saved by a Windows tool, or a file a command made (no question: a created file is
applied) — is therefore decoded whole into memory, and the copying is quadratic in its size. docs/security.md:
"Bounded memory: reads stream; a 1 GiB file costs one page of memory"; docs/file_read.md: "memory stays bounded
whatever the file's size". Measured here: 256 MiB → ~260 MiB of peak RSS and ~18 s; 512 MiB → +525 MiB and 74 s
(a 2 GiB file: gigabytes and tens of minutes, or the server killed by the OOM killer — every session served by it).

What a user loses: the file_read server (its memory, the machine's memory, a worker thread for minutes) to one
read of a file the model made itself with one shell_exec call that asked nothing.

Control: the same bytes as UTF-8 (one line too): the page is read from where it starts, peak RSS barely moves.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from support import RawClient, console_script
from support.boxed import Person, program, run, shell
from support.redteam import call

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "wide_line.json").read_text())
MIB: int = DATA["mib"]
BOUND_MIB = 64  # a page is 256 KiB of content: anything near the file's size is not "one page of memory"


def _peak_mib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    raise AssertionError("no VmHWM")


async def _made(workspace: Path) -> None:
    """The model's only move before the read: one shell_exec call making the files (the person declines all)."""
    command = program(workspace, "make_lines", DATA["program"]) + f" {MIB}"
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, command, timeout=300)
    assert out.get("transaction") == "applied" and not person.questions, out
    assert (workspace / "wide.txt").stat().st_size == MIB << 20 | 2


def _read_growth(workspace: Path, tmp_path: Path, name: str) -> tuple[int, dict[str, Any]]:
    raw = RawClient([console_script("mcp-server-file-read"), "--allow-path", str(workspace), "--audit-log",
                     str(tmp_path / f"{name}.audit.jsonl")], workspace, env={**os.environ},
                    stderr=tmp_path / f"{name}.err")  # fmt: skip
    try:
        raw.initialize()
        before = _peak_mib(raw.proc.pid)
        result = call(raw, 1, "file_read", {"path": name, "limit": 1}, timeout=600)
        return _peak_mib(raw.proc.pid) - before, result
    finally:
        raw.close()


async def test_control_utf8_single_line_read_is_bounded(workspace: Path, tmp_path: Path) -> None:
    await _made(workspace)
    grew, result = _read_growth(workspace, tmp_path, "narrow.txt")
    assert result["structuredContent"]["truncated"], result
    assert grew < BOUND_MIB, f"reading {MIB} MiB of UTF-8 (one line) grew the server by {grew} MiB"


async def test_attack_utf16_single_line_read_holds_the_whole_file(workspace: Path, tmp_path: Path) -> None:
    await _made(workspace)
    grew, result = _read_growth(workspace, tmp_path, "wide.txt")
    assert result["structuredContent"]["truncated"], result
    assert grew < BOUND_MIB, f"reading {MIB} MiB of UTF-16 (one line) grew the server by {grew} MiB"
