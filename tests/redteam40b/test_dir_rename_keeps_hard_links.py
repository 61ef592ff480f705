"""Fidelity: renaming a project directory that holds a name of a file with several names leaves those names one
file, as ``mv`` does natively (docs/shell_exec.md "What lands": hard links), both when the other name lies in
another directory (``sp/x1`` and ``d/x2``) and when both names are inside the moved directory (``both/f1`` and
``both/f2``); undo and redo are exact. The box moves such a directory as a copy: its files once landed as files of
their own."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.boxed import run, shell, snap, undo

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

CASES = {
    # command: the two names that must stay one file afterwards
    "mv sp sp2": ("sp2/x1", "d/x2"),
    "mv sp d/moved": ("d/moved/x1", "d/x2"),
    "mv d dd": ("sp/x1", "dd/x2"),
    "mv both both2": ("both2/f1", "both2/f2"),
}


async def test_dir_rename_keeps_hard_links(workspace: Path) -> None:
    """Every command through one server, each in a project of its own (``c<n>``), undone and redone once the server
    is gone; each failing one is named."""
    commands = sorted(CASES)
    roots = [workspace / f"c{n}" for n in range(len(commands))]
    for root in roots:
        for d in ("sp", "d", "both"):
            (root / d).mkdir(parents=True)
        (root / "sp" / "x1").write_text("span\n")
        os.link(root / "sp" / "x1", root / "d" / "x2")  # two names in two directories
        (root / "both" / "f1").write_text("both\n")
        os.link(root / "both" / "f1", root / "both" / "f2")  # two names in one directory
    calls = []
    async with shell(workspace) as client:
        for command, root in zip(commands, roots, strict=True):
            before = snap(root)
            calls.append((before, await run(client, command, cwd=str(root)), snap(root)))
    problems: list[str] = []
    for command, root, (before, out, after) in zip(commands, roots, calls, strict=True):
        if out["transaction"] != "applied":
            problems.append(f"[{command}] not applied: {out}")
            continue
        first, second = CASES[command]
        a, b = os.stat(root / first), os.stat(root / second)
        if (a.st_dev, a.st_ino) != (b.st_dev, b.st_ino):
            problems.append(
                f"[{command}] {first} and {second} are no longer one file (natively they are); "
                f"changes: {out['changes']['paths']}"
            )
            continue
        undo_id, why = undo(out["auditId"])
        if not undo_id:
            problems.append(f"[{command}] undo failed: {why}")
            continue
        if snap(root) != before:
            problems.append(f"[{command}] undo did not put the tree back")
        redo_id, why = undo(undo_id)
        if not redo_id:
            problems.append(f"[{command}] undo of the undo failed: {why}")
        elif snap(root) != after:
            problems.append(f"[{command}] undo of the undo did not bring the call's tree back")
    assert not problems, "\n".join(problems)
