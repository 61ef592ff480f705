"""Red team 5a: a file with an ACL replaced by a copy of itself with no ACL (`cp acl.txt t && mv t acl.txt`, the
same bytes) has no ACL natively; through the box the rename is read as a change of times only (not a `modify`,
so the box's rename note, d6e8ee0, is never consulted) or as nothing, and the real file keeps the ACL granting
user 54321 read."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.acls import acls, acls_work, project
from support.differential import differential

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


@pytest.mark.parametrize(
    "command",
    [
        "cat acl.txt > t && touch -r acl.txt t && chmod 640 t && mv t acl.txt",
        "cp acl.txt t && mv t acl.txt",
    ],
)
async def test_attack_acl_copy_renamed_over(workspace: Path, command: str) -> None:
    if not acls_work(workspace / "probe"):
        pytest.skip("no POSIX ACLs here")
    problems, out = await differential(workspace, project, command)
    assert not problems, "\n".join(problems)
    assert acls(workspace / "p") == acls(workspace.parent / "native"), out["changes"]
