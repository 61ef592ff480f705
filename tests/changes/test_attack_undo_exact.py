"""Undo and undo-of-undo around hard links, renames and metadata: ``mcp-guard undo`` of the call must put the tree
back exactly as it was before (names, bytes, modes, which names are one inode, user.* attributes), and an undo of
that undo must bring the call's tree back — each reporting success only when it did.

Each case FAILS when an undo reports success but leaves the tree different, or refuses an undo it could do."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

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


def _project(root: Path) -> None:
    """As the workspace fixture leaves it (``hello.txt``, ``sub/inner.txt``), with the linked files of the cases."""
    (root / "sub").mkdir(parents=True)
    (root / "hello.txt").write_text("hello\nworld\n")
    (root / "sub" / "inner.txt").write_text("inner\n")
    (root / "a").write_text("a\n")
    (root / "h1").write_text("linked\n")
    os.link(root / "h1", root / "h2")
    os.link(root / "h1", root / "sub" / "h3")
    (root / "esc").write_text("esc\n")
    os.setxattr(root / "esc", "user.overlay.overlay.kept", b"an attribute a command sees as user.overlay.kept")


def _changed(what: str, expected: dict[str, Any], now: dict[str, Any]) -> list[str]:
    return [
        f"{what} {k}: {expected.get(k)} -> {now.get(k)}"
        for k in sorted({*expected, *now})
        if expected.get(k) != now.get(k)
    ]


async def test_undo_and_its_undo_are_exact(workspace: Path) -> None:
    """Every case through one server, each in a project of its own (``<workspace>/<case>``), undone and redone once
    the server is gone; each failing one is named."""
    names = sorted(CASES)
    calls = []
    for case in names:
        _project(workspace / case)
    async with shell(workspace) as client:
        for case in names:
            root = workspace / case
            code = program(root, "case", CASES[case] + "\n")
            before = snap(root)
            out = await run(client, code, cwd=str(root))
            calls.append((root, before, out, snap(root)))
    problems: list[str] = []
    for case, (root, before, out, after) in zip(names, calls, strict=True):
        if out["transaction"] != "applied" or out["changes"]["conflicts"]:
            problems.append(f"[{case}] {out['transaction']}: {out['changes']['paths']}")
            continue
        undo_id, why = undo(out["auditId"])
        if not undo_id:
            problems.append(f"[{case}] undo refused: {why[-300:]}")
            continue
        problems += [f"[{case}] {p}" for p in _changed("after undo", before, snap(root))]
        redo_id, why = undo(undo_id)
        if not redo_id:
            problems.append(f"[{case}] undo of the undo refused: {why[-300:]}")
            continue
        problems += [f"[{case}] {p}" for p in _changed("after undoing the undo", after, snap(root))]
    assert not problems, "\n".join(problems)
