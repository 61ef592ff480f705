"""Red team 6: ``--mode read-only`` without the box (bubblewrap missing, Landlock there) runs any line the default
policy allows (commit 185b3c6: Landlock alone counts as "the kernel keeps commands from writing"). Landlock restricts
opening for write, creating, removing, renaming and truncating, but not chmod, chown, setxattr (ACLs included) or
utimes: a read-only session re-modes the project's files, grants an ACL and changes their times, on the real files,
and the result says nothing changed (``transaction: none``). The doc itself says "metadata changes ... which Landlock
alone does not cover".

The test gives the server a PATH without bwrap (a directory of links to /usr/bin's programs minus bwrap): the server
starts with "no box: bubblewrap is not installed ... commands run with Landlock".
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from support import serve
from support.acls import ACCESS
from support.boxed import Person, program

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

# user::rw- user:54321:rw- group::r-- mask::rw- other::--- : grants user 54321 what the mode 0600 does not
GRANT = (
    "import os, struct\n"
    "ANY = 0xFFFFFFFF\n"
    "acl = struct.pack('<I', 2) + b''.join(struct.pack('<HHI', t, p, i) for t, p, i in "
    "((1, 6, ANY), (2, 6, 54321), (4, 4, ANY), (0x10, 6, ANY), (0x20, 0, ANY)))\n"
    "os.setxattr('secret.txt', 'system.posix_acl_access', acl)\n"
)


def _no_bwrap_path(tmp_path: Path) -> str:
    bins = tmp_path / "path-without-bwrap"
    bins.mkdir()
    for name in os.listdir("/usr/bin"):
        if name != "bwrap":
            (bins / name).symlink_to(Path("/usr/bin") / name)
    return f"{Path(sys.executable).parent}:{bins}"


async def test_attack_read_only_session_without_box_changes_modes_acls_and_times(
    workspace: Path, tmp_path: Path
) -> None:
    secret = workspace / "secret.txt"
    secret.write_text("secret\n")
    secret.chmod(0o600)
    before = os.stat(workspace / "sub" / "inner.txt").st_mtime_ns
    grant = program(workspace, "grant", GRANT)
    person = Person(answer=False)
    async with serve(
        "mcp-server-shell-exec",
        workspace,
        "--mode",
        "read-only",
        env={"PATH": _no_bwrap_path(tmp_path)},
        elicitation_callback=person,
    ) as client:
        outs = [
            await client.call_tool("shell_exec", {"command": line})
            for line in (
                "chmod 0666 hello.txt",
                "touch -c -d 2001-01-01 sub/inner.txt",
                grant,
            )
        ]
    changed = []
    if stat.S_IMODE(os.stat(workspace / "hello.txt").st_mode) != 0o644:
        changed.append(f"hello.txt re-moded to {oct(stat.S_IMODE(os.stat(workspace / 'hello.txt').st_mode))}")
    if os.stat(workspace / "sub" / "inner.txt").st_mtime_ns != before:
        changed.append("sub/inner.txt's time changed")
    if ACCESS in os.listxattr(secret):
        changed.append("secret.txt (mode 600) got an ACL granting user 54321 rw")
    assert not changed, (
        f"a read-only session (no box, Landlock only) changed the real project: {changed}; "
        f"results: {[o.structured_content or o.content for o in outs]}"
    )
