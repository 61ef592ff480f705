"""Fidelity and undo exactness: a file with two names in two directories (``q`` and ``d/q``) appended to through
``q``. Natively the append changes neither directory's modification time. Through shell_exec both names get the
new bytes (as promised: rewritten under all of its names), but ``d``'s time becomes the time of the apply
(docs/shell_exec.md "What lands": modification times, directories too). ``mcp-guard undo`` then puts the bytes
back but leaves ``d``'s time changed again ("and the directories' times as they were"). Through ``d/q`` instead
of ``q`` both are exact. FAILS on the current code."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.boxed import run, shell, undo

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

OLD = 1_000_000_000 * 10**9  # 2001: a time no step of the test sets by itself


def _seed(root: Path) -> dict[str, int]:
    (root / "d").mkdir()
    (root / "q").write_text("q\n")
    os.link(root / "q", root / "d" / "q")
    os.utime(root / "d", ns=(OLD, OLD))
    return _times(root)


def _times(root: Path) -> dict[str, int]:
    return {rel: os.lstat(root / rel).st_mtime_ns for rel in ("d", "q", "d/q")}


async def test_append_through_one_name_leaves_the_other_names_directory_time(workspace: Path) -> None:
    _seed(workspace)
    async with shell(workspace) as client:
        out = await run(client, "echo more >> q")
    assert out["transaction"] == "applied", out
    assert (workspace / "d" / "q").read_text() == "q\nmore\n"
    assert os.lstat(workspace / "d").st_mtime_ns == OLD, "the apply changed d's time; natively an append leaves it"


async def test_undo_of_that_append_puts_the_directory_time_back(workspace: Path) -> None:
    before = _seed(workspace)
    async with shell(workspace) as client:
        out = await run(client, "echo more >> q")
    assert out["transaction"] == "applied", out
    undo_id, why = undo(out["auditId"])
    assert undo_id, why
    assert (workspace / "d" / "q").read_text() == "q\n"
    assert _times(workspace) == before, f"after undo: {_times(workspace)} != {before}"
