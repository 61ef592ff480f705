"""A call that changes only a directory's mode, attributes or time (``chmod 700 sub``, ``setfattr`` on it,
``touch -d 2001-01-01 sub``) says which directory in ``changes.paths`` and offers its undo, like any other change
(docs/shell_exec.md "Undo": every result that applied something says how). Such results once listed no path and
no undo."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from support.boxed import program, run, shell, undo

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


def _state(path: Path) -> tuple[int, int, list[str]]:
    st = os.lstat(path)
    return stat.S_IMODE(st.st_mode), st.st_mtime_ns, sorted(os.listxattr(path, follow_symlinks=False))


@pytest.mark.parametrize("how", ["chmod 700 sub", "attribute", "touch -d '2001-01-01 00:00' sub"])
async def test_a_directory_only_change_lists_the_directory_and_can_be_undone(workspace: Path, how: str) -> None:
    before = _state(workspace / "sub")
    command = program(workspace, "attr", "os.setxattr('sub', 'user.k', b'v')") if how == "attribute" else how
    async with shell(workspace) as client:
        out = await run(client, command)
    assert out["transaction"] == "applied", out
    assert {"path": "sub/", "action": "meta", "reason": ""} in out["changes"]["paths"], out["changes"]
    assert out["changes"]["undo"] == f"mcp-guard undo {out['auditId']}", out["changes"]
    assert _state(workspace / "sub") != before
    undo_id, why = undo(out["auditId"])
    assert undo_id, why
    assert _state(workspace / "sub") == before
