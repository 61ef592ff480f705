"""Undo and undo-of-undo around hard links, renames and metadata: ``mcp-guard undo`` of the call must put the tree
back exactly as it was before (names, bytes, modes, which names are one inode, user.* attributes), and an undo of
that undo must bring the call's tree back — each reporting success only when it did.

Each case FAILS when an undo reports success but leaves the tree different, or refuses an undo it could do."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.boxed import program, run, shell, snap, undo

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

CASES = {
    "rewrite-one-name-chmod-other": 'open("h1", "a").write("more\\n"); os.chmod("h2", 0o600)',
    "move-one-name-rewrite-other": 'os.rename("h1", "n"); open("h2", "w").write("y\\n")',
    "move-one-name-into-new-dir": 'os.mkdir("d"); os.rename("h1", "d/h1")',
    "new-link-then-chmod": 'os.link("a", "b"); os.chmod("b", 0o700)',
    "new-link-then-rewrite-anchor": 'os.link("a", "b"); open("a", "a").write("more\\n")',
    "delete-one-name-relink-other": 'os.unlink("h1"); os.link("h2", "h1b")',
    "swap-two-different-linked-files": 'os.rename("h1", "t"); os.rename("a", "h1"); os.rename("t", "a")',
    "attribute-through-one-name": 'os.setxattr("h1", "user.note", b"1")',
    "delete-both-names-recreate": 'os.unlink("h1"); os.unlink("h2"); open("h1", "w").write("new\\n")',
    "rename-onto-other-name": 'os.rename("h1", "h2"); os.rename("h1", "n")',  # the first does nothing, natively
    "dir-rename-with-linked-file": 'os.rename("sub", "sub2")',
    "escaped-attribute-kept-on-chmod": 'os.chmod("esc", 0o600)',
}


@pytest.mark.parametrize("case", sorted(CASES))
async def test_undo_and_its_undo_are_exact(workspace: Path, case: str) -> None:
    (workspace / "a").write_text("a\n")
    (workspace / "h1").write_text("linked\n")
    os.link(workspace / "h1", workspace / "h2")
    os.link(workspace / "h1", workspace / "sub" / "h3")
    (workspace / "esc").write_text("esc\n")
    os.setxattr(workspace / "esc", "user.overlay.overlay.kept", b"an attribute a command sees as user.overlay.kept")
    code = program(workspace, "case", CASES[case] + "\n")
    before = snap(workspace)
    async with shell(workspace) as client:
        out = await run(client, code)
    after = snap(workspace)
    assert out["transaction"] == "applied" and not out["changes"]["conflicts"], out["changes"]["paths"]
    problems = []
    undo_id, why = undo(out["auditId"])
    if not undo_id:
        problems.append(f"undo refused: {why[-300:]}")
    else:
        now = snap(workspace)
        problems += [
            f"after undo {k}: {before.get(k)} -> {now.get(k)}"
            for k in sorted({*before, *now})
            if before.get(k) != now.get(k)
        ]
        redo_id, why = undo(undo_id)
        if not redo_id:
            problems.append(f"undo of the undo refused: {why[-300:]}")
        else:
            now = snap(workspace)
            problems += [
                f"after undoing the undo {k}: {after.get(k)} -> {now.get(k)}"
                for k in sorted({*after, *now})
                if after.get(k) != now.get(k)
            ]
    assert not problems, "\n".join(problems)
