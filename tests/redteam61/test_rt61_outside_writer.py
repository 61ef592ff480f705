"""Red team 61 F1: a file someone else wrote in place while the call ran (an editor, a log, another session's
``>>``), then renamed over by the command: ``mv a.txt b.txt``, a rotation ``mv b.txt b.bak; mv a.txt b.txt``, a
backup then a move, a swap through a temporary name (data: rt61_outside.json). The command's ``b.txt`` is
``a.txt``'s copy-up (an overlay origin, ``a.txt``'s old time); the real ``b.txt`` has a time after the start.
``changes.upper._Reader.left_as_found`` took that for "copied up and never written; someone else wrote the real
file since", and the name got no change: ``a.txt`` deleted, ``b.txt`` as the other writer left it, no conflict —
``a.txt``'s bytes gone from the project. Now that rule holds only where the box's rename helper renamed no file to
the name: else the name is a modify, the other writer's file stays and the command's lands beside it.

Each case runs natively on a copy (the append, then the command) and through the real shell_exec, the same bytes
appended 0.7 s after the call starts (its command sleeps 2 s first). Passes when the tree is the native one, or a
conflict is said and no content of the native tree is missing from the project."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from support.boxed import Person, run, shell
from support.differential import native
from support.fidelity import differences, seed_project, snapshot

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]
CASES: dict[str, dict[str, Any]] = json.loads((Path(__file__).parent / "rt61_outside.json").read_text())
OLD = 1_200_000_000 * 10**9


def _project(root: Path) -> None:
    seed_project(root)
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            os.utime(os.path.join(directory, name), ns=(OLD, OLD), follow_symlinks=False)


def _contents(root: Path) -> set[str]:
    found = set()
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not (directory == str(root) and d == ".git")]
        for name in files:
            path = os.path.join(directory, name)
            if os.path.isfile(path) and not os.path.islink(path):
                found.add(hashlib.sha256(Path(path).read_bytes()).hexdigest())
    return found


@pytest.mark.parametrize("case", sorted(CASES))
async def test_attack_a_file_renamed_over_a_name_someone_wrote_meanwhile_is_a_conflict_never_dropped(
    tmp_path: Path, case: str
) -> None:
    spec = CASES[case]
    where, data = spec["append"]
    box, nat = tmp_path / "w" / "p", tmp_path / "native"
    _project(box)
    _project(nat)
    with open(nat / where, "a") as f:
        f.write(data)
    native(nat, spec["command"].removeprefix("sleep 2; "))
    out: dict[str, Any] = {}
    async with shell(tmp_path / "w", Person()) as client, anyio.create_task_group() as tg:

        async def call() -> None:
            out.update(await run(client, spec["command"], cwd=str(box)))

        tg.start_soon(call)
        await anyio.sleep(0.7)
        with open(box / where, "a") as f:
            f.write(data)
    found = differences(snapshot(nat), snapshot(box))
    conflicts = out["changes"]["conflicts"]
    lost = _contents(nat) - _contents(box)
    assert not found or (conflicts and not lost), (
        f"conflicts said: {conflicts}; landed: {out['changes']['paths']}\n"
        f"differs from native: {found}\ncontents lost from the project: {len(lost)}"
    )
