"""Red team 5a: undo (and undo of undo) of calls touching files with ACLs must put back the ACLs exactly (support.
differential compares only user.* attributes after undo, never system.posix_acl_*). Also hard-link groups of files
with an ACL, and renames of linked names over one."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.acls import acls, acls_work, project
from support.boxed import run, shell, undo
from support.differential import differential
from support.fidelity import snapshot

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

COMMANDS = [
    "mv -f plain/p.txt acl.txt",
    "echo more >> plain/p.txt && mv plain/p.txt acl.txt",
    "chmod 600 acl.txt",
    "echo more >> acl.txt",
    "mv acl.txt plain/",
    "rm acl.txt",
    "mv plain/p.txt t && mv acl.txt plain/p.txt && mv t acl.txt",
    "ln acl.txt h",
    "ln acl.txt h && echo more >> h",
    "ln plain/p.txt h && mv h acl.txt",
    "echo more >> plain/p.txt && ln plain/p.txt h && mv h acl.txt",
    "mv shared shared2",
    # an ACL the command took away (red team 5a F2): undo gives it back
    "python3 -c \"import os; os.removexattr('acl.txt', 'system.posix_acl_access')\"",
    "cp acl.txt t && mv t acl.txt",
]


@pytest.mark.parametrize("command", COMMANDS)
async def test_attack_acl_undo_exact(workspace: Path, command: str) -> None:
    if not acls_work(workspace / "probe"):
        pytest.skip("no POSIX ACLs here")
    project(workspace)
    before, before_acls = snapshot(workspace), acls(workspace)
    async with shell(workspace) as client:
        out = await run(client, command)
    assert out.get("transaction") == "applied", out
    after, after_acls = snapshot(workspace), acls(workspace)
    undo_id, why = undo(str(out["auditId"]))
    assert undo_id, why
    assert acls(workspace) == before_acls, "undo did not put the ACLs back"
    assert snapshot(workspace).entries == before.entries
    redo_id, why = undo(undo_id)
    assert redo_id, why
    assert acls(workspace) == after_acls, "undo of undo did not bring the call's ACLs back"
    assert snapshot(workspace).entries == after.entries


@pytest.mark.parametrize("command", COMMANDS[7:12])
async def test_attack_acl_links_fidelity(workspace: Path, command: str) -> None:
    if not acls_work(workspace / "probe"):
        pytest.skip("no POSIX ACLs here")
    problems, out = await differential(workspace, project, command)
    assert not problems, "\n".join(problems)
    assert acls(workspace / "p") == acls(workspace.parent / "native"), out["changes"]
