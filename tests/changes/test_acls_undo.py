"""Red team 5a: undo (and undo of undo) of calls touching files with ACLs must put back the ACLs exactly (support.
differential compares only user.* attributes after undo, never system.posix_acl_*). Also hard-link groups of files
with an ACL, and renames of linked names over one."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.acls import acls, acls_work, project
from support.boxed import run, shell, undo
from support.differential import Case, differentials, failed
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


async def test_attack_acl_undo_exact(workspace: Path) -> None:
    """Every command through one server, each in a project of its own (``c<n>``); undone, and that undo undone,
    once the server is gone: each failing one is named."""
    if not acls_work(workspace / "probe"):
        pytest.skip("no POSIX ACLs here")
    roots = [workspace / f"c{n}" for n in range(len(COMMANDS))]
    for root in roots:
        root.mkdir()
        project(root)
    calls = []
    async with shell(workspace) as client:
        for command, root in zip(COMMANDS, roots, strict=True):
            before, before_acls = snapshot(root), acls(root)
            out = await run(client, command, cwd=str(root))
            calls.append((out, before, before_acls, snapshot(root), acls(root)))
    problems: list[str] = []
    for command, root, (out, before, before_acls, after, after_acls) in zip(COMMANDS, roots, calls, strict=True):
        if out.get("transaction") != "applied":
            problems.append(f"[{command}] not applied: {out}")
            continue
        undo_id, why = undo(str(out["auditId"]))
        if not undo_id:
            problems.append(f"[{command}] undo failed: {why}")
            continue
        if acls(root) != before_acls:
            problems.append(f"[{command}] undo did not put the ACLs back")
        if snapshot(root).entries != before.entries:
            problems.append(f"[{command}] undo did not put the tree back")
        redo_id, why = undo(undo_id)
        if not redo_id:
            problems.append(f"[{command}] undo of the undo failed: {why}")
            continue
        if acls(root) != after_acls:
            problems.append(f"[{command}] undo of undo did not bring the call's ACLs back")
        if snapshot(root).entries != after.entries:
            problems.append(f"[{command}] undo of undo did not bring the call's tree back")
    assert not problems, "\n".join(problems)


async def test_attack_acl_links_fidelity(workspace: Path) -> None:
    if not acls_work(workspace / "probe"):
        pytest.skip("no POSIX ACLs here")
    cases = await differentials(workspace, project, COMMANDS[7:12])

    def same_acls(case: Case) -> list[str]:
        if acls(case.box) == acls(case.native):
            return case.found
        return [*case.found, f"ACLs {acls(case.box)} != natively {acls(case.native)}: {case.out['changes']}"]

    assert not (problems := failed(cases, same_acls)), problems
