"""Red team 68, finding F2 (MEDIUM): a root directory with a default ACL (``other::---``: a project kept from
others) — a file or directory the command makes directly in the root does not inherit it on the copy, and lands
with the umask's mode and no ACL: ``n.txt`` 0644 (others read) where natively it is 0640 with the inherited ACL;
``mkdir nd`` lands 0755 without the ACL (and without the default ACL every later file in it would inherit). The
result says nothing. docs/shell_exec.md: "a new entry keeps the ACL it inherits from its directory's default ACL".
Red team 5a's fix covers subdirectories (``shared/``), not the root itself.

Cause: shell/sandbox/overlays.py ``mount_copy``: the merged root of a copy *is* its fresh upper directory, given
the root's mode and times only (``os.chmod``/``os.utime``), not its ACLs (``system.posix_acl_access``/
``_default``) — the kernel makes new entries from the upper directory's (absent) default ACL; the reader
(changes/transactions.py ``read_upper``) has no ACL of the root to carry over.

FAILS while the new entries land otherwise than natively (modes or ACLs)."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import pytest

from support.acls import ACCESS, DEFAULT, acl, acls_work
from support.roots_differential import multi

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="no bwrap"),
]

ANY = 0xFFFFFFFF
# user::rwx user:<ours>:r-x group::r-x mask::r-x other::---
PRIVATE_DIR = acl((0x01, 7, ANY), (0x02, 5, os.getuid()), (0x04, 5, ANY), (0x10, 5, ANY), (0x20, 0, ANY))


def acl_root(parent: Path) -> None:
    a = parent / "A"
    (a / "d").mkdir(parents=True)
    (a / "f.txt").write_text("f\n")
    os.setxattr(a, ACCESS, PRIVATE_DIR)
    os.setxattr(a, DEFAULT, PRIVATE_DIR)


def acls_of(root: Path) -> dict[str, bytes]:
    out = {}
    for d, ds, fs in os.walk(root):
        for n in [".", *ds, *fs]:
            p = os.path.normpath(os.path.join(d, n))
            for a in (ACCESS, DEFAULT):
                with contextlib.suppress(OSError):
                    out[f"{os.path.relpath(p, root)}:{a[17:]}"] = os.getxattr(p, a)
    return out


@pytest.mark.parametrize("cmd", ["echo n > n.txt", "mkdir nd && echo x > nd/x"])
async def test_new_entries_in_a_root_with_a_default_acl_inherit_it(tmp_path: Path, cmd: str) -> None:
    if not acls_work(tmp_path / "probe"):
        pytest.skip("no POSIX ACLs here")
    found, out = await multi(tmp_path, acl_root, cmd, roots=("A",))
    nat, box = acls_of(tmp_path / "nat"), acls_of(tmp_path / "box")
    missing = sorted(set(nat) - set(box))
    assert not found and not missing, "\n".join(found) + f"\nACLs natively, not landed: {missing}\n{out['changes']}"
