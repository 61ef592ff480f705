"""Red team 67 (a fuzzer of owner-denying modes, as a user): F1 an undo of a call that wrote into a directory and
closed it (``echo x > own/n; chmod 0 own``) said success with the directory left as the call made it — the undo's
own ``chmod`` to the mode it had let the directory in with was taken for its grant (``trees.settled`` now keeps a
mode a step set); F2 the redo of it landed 0700 (``revert._unmeta`` read the mode while the directory was let in:
``as_found``); F3 a directory its owner may read but not search (0600, 0444, 0644) made the whole call "could not be
read; nothing applied" (``trees.open_own_dir`` lets it in too); F4 the undo of a ``user.*`` attribute set on a 0300
directory raised PermissionError (its attributes are read with u+r given); F6 a redo restoring a new 0300 directory
while the call linked a file was refused (``revert._rejoin`` opens it as its owner may). Each case runs natively and
through the real server (one server, a pair of copies each), trees read without a chmod, then undone and redone.
Command lines are data (rt67_owner_modes.json); the module runs again without CAP_DAC_OVERRIDE."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import support.differential as differential_module
from support.as_a_user import again_as_a_user, as_a_user, snapshot_unopened
from support.differential import differentials, failed

CASES = json.loads((Path(__file__).parent / "rt67_owner_modes.json").read_text())
pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None or shutil.which("unshare") is None, reason="no bwrap, unshare"),
]
OLD_NS = 1_000_000_000 * 10**9
FILES = ["a.txt", "b.txt", "ro.txt", "secret", "drop", "d/f", "d/sub/h", "rod/f", "rod/sub/g", "closed/f",
         "box/in.txt", "srch/k", "own/f"]  # fmt: skip
MODES = {"ro.txt": 0o444, "secret": 0, "drop": 0o200, "rod/sub/g": 0o444, "rod/f": 0o444, "rod/sub": 0o555,
         "rod": 0o555, "closed": 0, "box": 0o300, "srch": 0o100, "own": 0o700}  # fmt: skip


def test_owner_denying_modes_as_a_user(tmp_path: Path) -> None:
    again_as_a_user(__file__, tmp_path)


def project(root: Path) -> None:
    for directory in ("d/sub", "rod/sub", "closed", "box", "srch", "empty", "own"):
        (root / directory).mkdir(parents=True)
    for name in FILES:
        (root / name).write_text(f"{name}\n")
    for path in sorted(root.rglob("*"), reverse=True):
        os.utime(path, ns=(OLD_NS, OLD_NS), follow_symlinks=False)
    for name, mode in MODES.items():  # (deepest first: a parent closed after what is in it)
        (root / name).chmod(mode)
    os.utime(root, ns=(OLD_NS, OLD_NS))


@as_a_user
async def test_attack_owner_denying_modes_land_undo_and_redo_as_natively(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(differential_module, "snapshot", snapshot_unopened)
    monkeypatch.setattr(differential_module, "symlink_groups", lambda root: set())  # (its os.walk cannot enter 000)
    cases = await differentials(workspace, project, CASES)
    assert not (problems := failed(cases, lambda c: c.found)), problems
    assert not [(c.name, c.out["changes"]) for c in cases if c.out["changes"]["conflicts"]]
