"""Red team 5a: a command that removes or narrows a file's ACL (``setfacl -b``/``-x``, ``removexattr``) revokes
access natively; through the box the call was "unchanged" and the real file kept the ACL granting user 54321 read
(and a directory its default ACL). The docs say an ACL a command *sets* never lands; nothing says one it removes
stays."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.acls import ANY, acl, acls, acls_work, project
from support.differential import Case, differentials, failed

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

# user::rw- group::r-- other::--- as an ACL (the minimal one: what setfacl -x u:54321 leaves, mask gone)
NARROW = acl((0x01, 6, ANY), (0x04, 4, ANY), (0x20, 0, ANY))


def with_narrow(root: Path) -> None:
    project(root)
    (root / ".narrow.bin").write_bytes(NARROW)


REMOVALS = dict(
    zip(
        ["remove-access", "narrow-access", "remove-default", "remove-then-write"],
        [
        "python3 -c \"import os; os.removexattr('acl.txt', 'system.posix_acl_access')\"",
        "python3 -c \"import os; os.setxattr('acl.txt', 'system.posix_acl_access', open('.narrow.bin','rb').read())\"",
        "python3 -c \"import os; os.removexattr('shared', 'system.posix_acl_default')\"",
        "python3 -c \"import os; os.removexattr('acl.txt', 'system.posix_acl_access')\" && echo more >> acl.txt",
        ],
        strict=True,
    )
)  # fmt: skip


def _removed_stays(case: Case) -> list[str]:
    out = case.out
    if acls(case.box) == acls(case.native):
        return case.found
    return [
        f"ACLs {acls(case.box)} != natively {acls(case.native)}: {(out['transaction'], out['changes'], out['stderr'])}",
        *case.found,
    ]


async def test_attack_acl_removed_stays(workspace: Path) -> None:
    """Every command through one server (each in copies of its own): each failing one is named."""
    if not acls_work(workspace / "probe"):
        pytest.skip("no POSIX ACLs here")
    cases = await differentials(workspace, with_narrow, REMOVALS)
    assert not (problems := failed(cases, _removed_stays)), problems
