"""POSIX access control lists as the kernel stores them (``system.posix_acl_*`` values), for tests that give a
project its own ACLs: version 2, then (tag, permissions, id) entries."""

from __future__ import annotations

import struct

ACCESS, DEFAULT = "system.posix_acl_access", "system.posix_acl_default"
ANY = 0xFFFFFFFF  # the id of an entry that names no one (the owner, the owning group, the mask, others)
USER_OBJ, USER, GROUP_OBJ, MASK, OTHER = 0x01, 0x02, 0x04, 0x10, 0x20


def acl(*entries: tuple[int, int, int]) -> bytes:
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, perm, ident) for tag, perm, ident in entries)
