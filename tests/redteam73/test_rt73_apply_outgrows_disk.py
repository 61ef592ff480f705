"""Red team 73, F1: an apply that itself needs more disk than is free, with the project, the copies and the history
on one file system (the usual case: all under the user's home). The command deletes many small files (its copy
takes no data pages: whiteouts), so it runs well above the disk floor; the apply then keeps one pre-image per file,
and each pre-image's metadata takes a block. The history's room check counts free space only for a history on
another file system, so the apply starts, runs out of space half way, and must then go back whole
(docs/shell_exec.md: "a step that fails for want of space puts back what the others did").

The disk is a small tmpfs mounted in a temp dir of ours (root). The command's line is a plain `rm` of the
project's own files in that temp dir (data)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import anyio
import pytest

from support.boxed import Person, shell, undo
from support.small_disk import files, fill_leaving, small_disk

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None or os.getuid() != 0, reason="needs bwrap and root (mount)"),
]

N = 1500
OLD_NS = 1_000_000_000 * 10**9


async def test_an_apply_that_runs_out_of_disk_goes_back_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with small_disk("64m") as disk:
        state = disk / "state"
        state.mkdir()
        monkeypatch.setenv("XDG_STATE_HOME", str(state))
        root = disk / "proj"
        (root / "d").mkdir(parents=True)
        for i in range(N):
            (root / "d" / f"f{i:04}.txt").write_text(f"file {i}\n")
        (root / "keep.txt").write_text("keep\n")
        before = files(root)
        fill_leaving(disk, N * 4096 // 2)
        async with shell(root, Person()) as client:
            with anyio.fail_after(240):
                result = await client.call_tool("shell_exec", {"command": "rm d/f*.txt", "timeoutSeconds": 120})
            out = dict(result.structured_content or {})
            text = str(result.content)[:600]
            now = files(root)
            gone = len(before) - len(now)
            live = (
                f"is_error={result.is_error} transaction={out.get('transaction')!r} reason={out.get('reason')!r} {text}"
            )
        problems = []
        # The result while the server lived: all old (failed) or all new (applied).
        if gone not in (0, N):
            problems.append(f"the live server left {gone} of {N} files deleted: {live}")
        (disk / "hog").unlink()
        # The next start (recovery), then the tree must be all old or all new, and if all new, undoable.
        async with shell(root, Person()) as client:
            with anyio.fail_after(120):
                await client.call_tool("shell_exec", {"command": "true"})
        now = files(root)
        if now != before:
            problems.append(f"after the next start, {len(before) - len(now)} of {N} files are deleted")
            call = out.get("auditId") or re.search(r"auditId=([0-9a-f]{12})", text).group(1)  # type: ignore[union-attr]
            undo_id, why = undo(str(call))
            problems.append(f"undo of {call}: {undo_id or why}")
            problems.append(f"after undo: {len(before) - len(files(root))} of {N} files missing")
        assert not problems, "\n".join(problems)
