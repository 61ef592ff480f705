"""POSIX access control lists as the kernel stores them (``system.posix_acl_*`` values), for tests that give a
project its own ACLs: version 2, then (tag, permissions, id) entries."""

from __future__ import annotations

import os
import struct
from pathlib import Path

ACCESS, DEFAULT = "system.posix_acl_access", "system.posix_acl_default"
ANY = 0xFFFFFFFF  # the id of an entry that names no one (the owner, the owning group, the mask, others)
USER_OBJ, USER, GROUP_OBJ, MASK, OTHER = 0x01, 0x02, 0x04, 0x10, 0x20


def acl(*entries: tuple[int, int, int]) -> bytes:
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, perm, ident) for tag, perm, ident in entries)


# user::rw- user:54321:r-- group::r-- mask::r-- other::---
FILE_ACL = acl((0x01, 6, ANY), (0x02, 4, 54321), (0x04, 4, ANY), (0x10, 4, ANY), (0x20, 0, ANY))
# user::rw- user:<ours>:rw- group::r-- mask::rw- other::--- (a user the box maps: the command can set it)
WIDER_ACL = acl((0x01, 6, ANY), (0x02, 6, os.getuid()), (0x04, 4, ANY), (0x10, 6, ANY), (0x20, 0, ANY))


# The same, naming a user the box maps (ours): the box's move helper can carry it (one it does not map is lost)
MAPPED_ACL = acl((0x01, 6, ANY), (0x02, 4, os.getuid()), (0x04, 4, ANY), (0x10, 4, ANY), (0x20, 0, ANY))
MAPPED_DIR = acl((0x01, 7, ANY), (0x02, 5, os.getuid()), (0x04, 5, ANY), (0x10, 5, ANY), (0x20, 0, ANY))


def project(root: Path) -> None:
    for name in ("acl.txt", "other.txt"):
        (root / name).write_text(f"{name}\n")
        os.setxattr(root / name, ACCESS, FILE_ACL)
    (root / "team").mkdir()
    (root / "team" / "f").write_text("f\n")
    os.setxattr(root / "team" / "f", ACCESS, FILE_ACL)
    (root / "plain").mkdir()
    (root / "plain" / "p.txt").write_text("p\n")
    (root / "shared" / "in").mkdir(parents=True)
    (root / "shared" / "in" / "s.txt").write_text("s\n")
    os.setxattr(root / "shared" / "in" / "s.txt", ACCESS, MAPPED_ACL)
    for directory in ("shared", "shared/in"):
        os.setxattr(root / directory, ACCESS, MAPPED_DIR)
        os.setxattr(root / directory, DEFAULT, MAPPED_DIR)


def acls(root: Path) -> dict[str, dict[str, bytes]]:
    found: dict[str, dict[str, bytes]] = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(directory, name)
            own = {a: os.getxattr(path, a) for a in os.listxattr(path) if a in (ACCESS, DEFAULT)}
            if own:
                found[os.path.relpath(path, root)] = own
    return found


def acls_work(path: Path) -> bool:
    path.write_text("probe\n")
    try:
        os.setxattr(path, ACCESS, FILE_ACL)
    except OSError:
        return False
    finally:
        path.unlink()
    return True
